// The cost of tracing (with no exporter set, nothing slows down; docs/architecture.md): the same grant load with span export off and on,
// alternating (off, on, off, on) so machine noise hits both alike. "On" exports every span over OTLP/HTTP to a sink
// in this process that counts spans and answers at once, so the figure is the services' cost, not a collector's.
import { runGrantLoad, type ThroughputResult } from "./grants.ts";
import type { Service } from "./stack.ts";

type OtlpBody = { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] };

export type TracingCost = { off: ThroughputResult[]; on: ThroughputResult[]; spansReceived: number };

export async function measureTracingCost(args: {
  /** Starts entitlement and notification with the extra environment; returns entitlement and a stop for both. */
  start: (env: Record<string, string>, label: string) => Promise<{ entitlement: Service; stop: () => Promise<void> }>;
  /** Waits until the pipeline is quiet between runs. */
  settle: () => Promise<unknown>;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  rounds: number;
  tag: string;
  progress: (line: string) => void;
}): Promise<TracingCost> {
  let spansReceived = 0;
  const sink = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const body = (await request.json().catch(() => ({}))) as OtlpBody;
      for (const rs of body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) spansReceived += ss.spans?.length ?? 0;
      return Response.json({});
    },
  });
  const result: TracingCost = { off: [], on: [], spansReceived: 0 };
  try {
    for (let round = 0; round < args.rounds; round++) {
      for (const mode of ["off", "on"] as const) {
        const env: Record<string, string> =
          mode === "on" ? { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}` } : {};
        const services = await args.start(env, `tracing-${mode}-${round}`);
        try {
          await runGrantLoad({
            url: services.entitlement.url,
            headers: args.headers,
            connections: 16,
            seconds: 1,
            tag: args.tag,
          });
          await args.settle();
          args.progress(`tracing ${mode}, round ${round + 1}: ${args.connections} connections, ${args.seconds}s`);
          const run = { url: services.entitlement.url, headers: args.headers, tag: args.tag };
          result[mode].push(await runGrantLoad({ ...run, connections: args.connections, seconds: args.seconds }));
          await args.settle();
        } finally {
          await services.stop();
        }
      }
    }
  } finally {
    sink.stop(true);
  }
  result.spansReceived = spansReceived;
  return result;
}

export function mean(runs: ThroughputResult[], pick: (r: ThroughputResult) => number): number {
  return runs.length === 0 ? 0 : runs.reduce((sum, r) => sum + pick(r), 0) / runs.length;
}
