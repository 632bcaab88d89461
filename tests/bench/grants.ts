// Command throughput through the API with autocannon (grants, bundles, point reservations): every request a new
// Idempotency-Key and fresh keys.
import autocannon from "autocannon";

export type ThroughputResult = {
  connections: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  ok: number;
  non2xx: number;
  errors: number;
};

let sequence = 0;

/** The path and body of the n-th request of a run (every request a new Idempotency-Key). */
/** Where a phase sends its requests: the API's base URL and the headers of its token. */
export type ApiTarget = { url: string; headers: Record<string, string> };

export type Command = { path: string; body: (run: string, n: number) => unknown };

export const GRANT: Command = {
  path: "/v1/entitlements/grants",
  body: (run, n) => ({
    user_id: `u-${run}-${n}`,
    stock_keeping_unit: `sku-${n}`,
    reason: "bench",
    purchase_id: `p-${run}-${n}`,
  }),
};

/** A bundle of `items` new items of a new user. */
export const bundleOf = (items: number): Command => ({
  path: "/v1/entitlements/bundle-grants",
  body: (run, n) => ({
    user_id: `u-${run}-${n}`,
    stock_keeping_units: Array.from({ length: items }, (_, i) => `sku-${i}`),
    reason: "bench",
    purchase_id: `p-${run}-${n}`,
  }),
});

/** A point reservation due in an hour, so the scheduler has nothing to do meanwhile. */
export const RESERVATION: Command = {
  path: "/v1/points/reservations",
  body: (run, n) => ({
    user_id: `u-${run}-${n}`,
    point_amount: 10,
    execute_at: new Date(Date.now() + 3_600_000).toISOString(),
  }),
};

export function runGrantLoad(args: {
  url: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  tag: string;
}): Promise<ThroughputResult> {
  return runCommandLoad({ ...args, command: GRANT });
}

/** What an autocannon run at `connections` measured: 2xx answers a second, latencies, and the rest. */
export function throughputOf(result: autocannon.Result, connections: number): ThroughputResult {
  const ok = result["2xx"];
  return {
    connections,
    rps: ok / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    ok,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/** The requests of a run of `command`: the n-th has the Idempotency-Key `k-<run>-<n>` and the body `body(run, n)`. */
export function numberedRequests(command: Command, run: string, headers: Record<string, string>): autocannon.Request[] {
  let i = 0;
  return [
    {
      method: "POST",
      setupRequest: (request) => {
        const n = i++;
        return {
          ...request,
          headers: { ...headers, "content-type": "application/json", "idempotency-key": `k-${run}-${n}` },
          body: JSON.stringify(command.body(run, n)),
        };
      },
    },
  ];
}

/** Requests per second of one command (2xx only) with autocannon. */
export async function runCommandLoad(
  args: ApiTarget & {
    connections: number;
    seconds: number;
    tag: string;
    command: Command;
  },
): Promise<ThroughputResult> {
  const run = `${args.tag}-c${args.connections}-${sequence++}`;
  const result = await autocannon({
    url: `${args.url}${args.command.path}`,
    connections: args.connections,
    duration: args.seconds,
    requests: numberedRequests(args.command, run, args.headers),
  });
  return throughputOf(result, args.connections);
}
