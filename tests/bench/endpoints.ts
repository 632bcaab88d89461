// Webhook endpoints under load: notifications stored at a steady rate fan out to ENDPOINTS receivers; the bench reports,
// per receiver, the latency from the commit that stored a notification to its arrival (p50, p99, max), whether every
// delivery ended SENT, and, in a second phase with one receiver that never answers, the other receivers' p99 beside
// the first phase's. The delivery worker runs in this process (as in the service); the receivers in a child process.
//   DATABASE_URL=postgres://... bun run tests/bench/endpoints.ts [--rate 1000] [--seconds 10] [--endpoints 10]
// --tiny: 50/s for 2 s per phase, to check the script runs.
import { parseArgs } from "node:util";
import { loadNotificationConfig } from "../../src/notification/config.ts";
import { insertEndpoint } from "../../src/notification/features/endpoints/queries.ts";
import { createSecretBox, newSigningSecret } from "../../src/notification/features/endpoints/secrets.ts";
import { storeEvents } from "../../src/notification/intake/consumer/batch.ts";
import { createNotificationMetrics } from "../../src/notification/metrics.ts";
import { endpointDeliveryWorker } from "../../src/notification/work/endpoints/build.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { createTestDatabase } from "../support/infra.ts";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "1000" },
    seconds: { type: "string", default: "10" },
    endpoints: { type: "string", default: "10" },
    tiny: { type: "boolean", default: false },
  },
});
const rate = values.tiny ? 50 : Number(values.rate);
const seconds = values.tiny ? 2 : Number(values.seconds);
const endpointCount = Number(values.endpoints);
const KEY = Buffer.alloc(32, 1);
const TICK_MS = 10;
const nowMs = () => performance.timeOrigin + performance.now();

async function startReceivers(hanging: number[]) {
  const child = Bun.spawn(["bun", "run", `${import.meta.dir}/endpoint-receivers.ts`], {
    env: { ...process.env, COUNT: String(endpointCount), HANGING: hanging.join(",") },
    stdout: "pipe",
  });
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  const { ports } = JSON.parse(new TextDecoder().decode(value)) as { ports: number[] };
  const receipts = async (port: number) =>
    (await (await fetch(`http://127.0.0.1:${port}/receipts`)).json()) as [string, number][];
  return { ports, receipts, stop: () => child.kill() };
}

/** Stores `rate` notifications a second for `seconds`, in batches every TICK_MS; returns each id's commit time. */
async function storeAtRate(sql: Sql, waker: Waker): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  const perTick = Math.max(1, Math.round((rate * TICK_MS) / 1000));
  const ticks = Math.round((seconds * 1000) / TICK_MS);
  const start = performance.now();
  for (let tick = 0; tick < ticks; tick++) {
    const events = Array.from({ length: perTick }, () => ({
      eventId: crypto.randomUUID(),
      notifications: [
        {
          userId: `u${tick}`,
          type: "EntitlementGranted" as const,
          occurredAt: new Date().toISOString(),
          payload: { tick },
        },
      ],
    }));
    await storeEvents(sql, events, new Date());
    const at = nowMs();
    waker.wake();
    const ids = await sql<{ notification_id: string }[]>`
      select notification_id from notifications where event_id = any(${events.map((e) => e.eventId)}::uuid[])`;
    for (const r of ids) committed.set(r.notification_id, at);
    const wait = start + (tick + 1) * TICK_MS - performance.now();
    if (wait > 0) await Bun.sleep(wait);
  }
  return committed;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

/** One endpoint a receiver's port, enabled for every event type, with a signing secret sealed by KEY. */
async function insertEndpoints(sql: Sql, ports: number[], label: string): Promise<void> {
  const box = createSecretBox(KEY);
  for (const port of ports) {
    const endpointId = crypto.randomUUID();
    const sealed = box.seal(endpointId, newSigningSecret());
    await insertEndpoint(sql, {
      endpointId,
      url: `http://127.0.0.1:${port}/hook`,
      description: label,
      eventTypes: null,
      enabled: true,
      secretCiphertext: sealed,
      now: new Date(),
    });
  }
}

/** The service's endpoint delivery worker, in this process, until `signal` fires; `waker` wakes it as the consumer does. */
function runDeliveryWorker(sql: Sql, waker: Waker, signal: AbortSignal) {
  const config = loadNotificationConfig({
    NOTIFICATION_ENDPOINT_SECRET_KEY: KEY.toString("hex"),
    NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
  });
  const worker = endpointDeliveryWorker({
    config,
    sql,
    log: silentLogger,
    now: () => new Date(),
    metrics: createNotificationMetrics(createRegistry("bench")),
    waker,
    workerId: "bench",
  });
  return worker?.run(signal);
}

/** Until `expected` deliveries are SENT, or 30 s pass. */
async function waitForSent(sql: Sql, expected: number): Promise<void> {
  const deadline = performance.now() + 30_000;
  while (performance.now() < deadline) {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries d join webhook_endpoints e using (endpoint_id)
      where d.status = 'SENT'`;
    if ((row?.n ?? 0) >= expected) break;
    await Bun.sleep(200);
  }
}

type Receivers = Awaited<ReturnType<typeof startReceivers>>;

/**
 * Prints each receiver's count and latencies from commit to arrival; returns the answering ones' p99s, their last
 * arrival and how many distinct notifications they received.
 */
async function reportReceipts(receivers: Receivers, hanging: number[], committed: Map<string, number>) {
  const total = committed.size;
  const p99s: number[] = [];
  let lastArrival = 0;
  let arrived = 0;
  for (const [index, port] of receivers.ports.entries()) {
    const got = await receivers.receipts(port);
    if (!hanging.includes(index)) {
      for (const [, at] of got) lastArrival = Math.max(lastArrival, at);
      arrived += new Set(got.map(([id]) => id)).size;
    }
    const latencies = got
      .flatMap(([id, at]) => (committed.has(id) ? [at - (committed.get(id) as number)] : []))
      .sort((a, b) => a - b);
    const tag = hanging.includes(index) ? " (hanging)" : "";
    const p99 = quantile(latencies, 0.99);
    if (!tag) p99s.push(p99);
    console.log(
      `  endpoint ${index}${tag}: received ${new Set(got.map(([id]) => id)).size}/${total}, ` +
        `p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${quantile(latencies, 1).toFixed(1)} ms`,
    );
  }
  return { p99s, lastArrival, arrived };
}

async function phase(label: string, hanging: number[]): Promise<number[]> {
  const db = await createTestDatabase("bench_endpoints");
  const sql = createSql({ url: db.url, schema: "notification", max: 10, applicationName: "bench-endpoints" });
  const receivers = await startReceivers(hanging);
  const controller = new AbortController();
  try {
    await insertEndpoints(sql, receivers.ports, label);
    const waker = new Waker();
    const running = runDeliveryWorker(sql, waker, controller.signal);
    const committed = await storeAtRate(sql, waker);
    const total = committed.size;
    const healthy = receivers.ports.filter((_, i) => !hanging.includes(i));
    await waitForSent(sql, total * healthy.length);
    console.log(
      `${label}: ${total} notifications stored at ${rate}/s for ${seconds} s, ${receivers.ports.length} endpoints`,
    );
    const { p99s, lastArrival, arrived } = await reportReceipts(receivers, hanging, committed);
    const [sent] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where status = 'SENT'`;
    console.log(`  SENT deliveries: ${sent?.n}/${total * healthy.length} expected of the answering endpoints`);
    const span = (lastArrival - Math.min(...committed.values())) / 1000;
    console.log(
      `  drain: ${arrived} deliveries from the first commit to the last arrival in ${span.toFixed(1)} s ` +
        `(${Math.round(arrived / span)}/s; stored at ${Math.round((total * healthy.length) / seconds)}/s)`,
    );
    controller.abort();
    receivers.stop();
    await running;
    return p99s;
  } finally {
    controller.abort();
    receivers.stop();
    await sql.end({ timeout: 5 });
    await db.drop();
  }
}

const alone = await phase("all answering", []);
const beside = await phase("one hanging", [endpointCount - 1]);
const worst = (xs: number[]) => Math.max(...xs).toFixed(1);
console.log(
  `p99 of the answering endpoints, worst: ${worst(alone)} ms alone, ${worst(beside)} ms beside a hanging one`,
);
