// What one open player stream holds in Notification's heap, by object type, run by hand:
// `DATABASE_URL=… NATS_URL=… bun tests/bench/stream-memory.ts [streams]` (2,000 by default; at most about 19,000 on a
// machine whose processes may hold 20,000 files). One players' replica in this process (the tests' harness), its
// streams read by processes of their own (stream-readers.ts); the heap's object counts (bun:jsc's heapStats) and the
// process's RSS are read after one stream and after all of them, each after a full collection, and divided by the
// streams in between. The counts say what a stream holds (closures, promises, its body's stream objects); the RSS that
// the heap does not explain is the server's own per-connection memory.
import { heapStats } from "bun:jsc";
import { playerConfig, playerToken, startReplica } from "../notification/players/harness.ts";
import { startTestIdp } from "../support/idp.ts";
import { openTestDatabase } from "../support/infra.ts";
import { rssMb } from "./stack.ts";
import { READERS_PER_PROCESS, startReaders } from "./stream-readers.ts";

const streams = Number(process.argv[2] ?? 2_000);

async function snapshot() {
  await Bun.sleep(1_000);
  Bun.gc(true);
  const stats = heapStats();
  return { rss: rssMb(process.pid), heap: stats.heapSize, counts: stats.objectTypeCounts as Record<string, number> };
}

type Snapshot = Awaited<ReturnType<typeof snapshot>>;

function print(before: Snapshot, after: Snapshot, n: number): void {
  const rssKb = ((after.rss - before.rss) * 1024) / n;
  console.log(
    `${n} streams: RSS ${rssKb.toFixed(2)} KB a stream, heap ${((after.heap - before.heap) / n).toFixed(0)} B`,
  );
  const rows = Object.entries(after.counts)
    .map(([type, count]) => [type, (count - (before.counts[type] ?? 0)) / n] as const)
    .filter(([, per]) => Math.abs(per) >= 0.5)
    .sort((a, b) => b[1] - a[1]);
  for (const [type, per] of rows) console.log(`${per.toFixed(2).padStart(8)}  ${type}`);
}

const idp = await startTestIdp();
const fixture = await openTestDatabase("stream_memory", { service: "notification" });
const config = playerConfig(idp, { NOTIFICATION_STREAM_MAX: String(streams + 10) });
const replica = await startReplica({ config, sql: fixture.sql, nc: undefined });
const tokens = await Promise.all(
  Array.from({ length: streams }, (_, i) => playerToken(idp, `memory-${i}`, { expiresInS: 3_600 })),
);
const pool = startReaders(Math.ceil(streams / READERS_PER_PROCESS), () => {});
try {
  // One stream first, so that what the first builds once (compiled code, the pool's connections) is not counted.
  await pool.open(replica.url, tokens.slice(0, 1));
  const before = await snapshot();
  await pool.open(replica.url, tokens.slice(1));
  print(before, await snapshot(), streams - 1);
} finally {
  await pool.close();
  await replica.stop();
  await fixture.close();
  await idp.close();
}
process.exit(0);
