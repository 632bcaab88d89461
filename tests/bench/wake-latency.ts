// How long work committed on one replica waits before another replica's worker hears of it, by the debounced NOTIFY
// after commit (src/entitlement/work/wakeups.ts), against what polling would cost for the same latency: the
// database time of one empty claim of the relay. Two pools stand for two replicas. Run:
//   DATABASE_URL=postgres://... bun run tests/bench/wake-latency.ts
import { claimOutboxBatch } from "../../src/entitlement/work/outbox/queries.ts";
import { createWakeups } from "../../src/entitlement/work/wakeups.ts";
import { createSql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createTestDatabase } from "../support/infra.ts";

const db = await createTestDatabase("bench_wake");
const open = (name: string) => createSql({ url: db.url, schema: "entitlement", max: 2, applicationName: name });
const [a, b] = [open("replica-a"), open("replica-b")];
const stop = new AbortController();
try {
  const writer = createWakeups({ sql: a, log: silentLogger, retryMs: 1_000 });
  const reader = createWakeups({ sql: b, log: silentLogger, retryMs: 1_000 });
  let heard: (() => void) | undefined;
  const stopListening = reader.onEvents(() => heard?.(), stop.signal);
  await Bun.sleep(300);
  const latencies: number[] = [];
  for (let i = 0; i < 200; i++) {
    const woken = new Promise<void>((resolve) => (heard = resolve));
    const started = performance.now();
    writer.committed({ events: true });
    await woken;
    latencies.push(performance.now() - started);
    await Bun.sleep(20);
  }
  latencies.sort((x, y) => x - y);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]?.toFixed(2);
  console.log(`cross-replica wake, 200 commits: median ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`);
  const claims = 500;
  const args = { now: new Date(), leaseUntil: new Date(Date.now() + 30_000), lockedBy: "x", limit: 50, maxAttempts: 5 };
  await claimOutboxBatch(b, args);
  const cpu = process.cpuUsage();
  const t = performance.now();
  for (let i = 0; i < claims; i++) await claimOutboxBatch(b, args);
  const ms = (performance.now() - t) / claims;
  const clientMs = (process.cpuUsage(cpu).user + process.cpuUsage(cpu).system) / 1000 / claims;
  console.log(`one empty claim (what each poll costs): ${ms.toFixed(3)} ms wall, ${clientMs.toFixed(3)} ms client CPU`);
  stop.abort();
  await stopListening();
} finally {
  await a.end({ timeout: 5 });
  await b.end({ timeout: 5 });
  await db.drop();
}
