// Grant throughput through the API with autocannon: every request a new Idempotency-Key and a fresh (user, sku).
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

export async function runGrantLoad(args: {
  url: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  tag: string;
}): Promise<ThroughputResult> {
  const run = `${args.tag}-c${args.connections}-${sequence++}`;
  let i = 0;
  const result = await autocannon({
    url: `${args.url}/v1/entitlements/grants`,
    connections: args.connections,
    duration: args.seconds,
    requests: [
      {
        method: "POST",
        setupRequest: (request) => {
          const n = i++;
          return {
            ...request,
            headers: {
              ...args.headers,
              "content-type": "application/json",
              "idempotency-key": `k-${run}-${n}`,
            },
            body: JSON.stringify({
              user_id: `u-${run}-${n}`,
              stock_keeping_unit: `sku-${n}`,
              reason: "bench",
              purchase_id: `p-${run}-${n}`,
            }),
          };
        },
      },
    ],
  });
  const ok = result["2xx"];
  return {
    connections: args.connections,
    rps: ok / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    ok,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}
