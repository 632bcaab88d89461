// The relay drain on its own, to compare settings or builds without the rest of the bench: `dist/entitlement serve`
// (or BIN, e.g. "bun src/entitlement/main.ts") on a fresh database of DATABASE_URL's server, a backlog of PENDING rows
// inserted in one statement and announced as another replica's commit, events/s until the last is published, and the
// service's CPU per event; with --raw, the raw publish of as many messages beside it. The environment reaches the
// service, so ENTITLEMENT_OUTBOX_CONCURRENCY=8 or ENTITLEMENT_OUTBOX_MAX_BATCH_SIZE=1000 try other settings.
// --rounds N drains N backlogs one after the other into the same database: the later ones meet the earlier ones'
// PUBLISHED rows and dead row versions, as the full bench's drain meets those of its throughput phases. DRAIN_TAG
// names the database and the streams (default drain_<time>), so another process can watch or add to them.
// --fillfactor N sets the outbox table's fillfactor before the drains (an experiment; the schema keeps the default).
// --trickle N first commits N events one at a time, about 300 a second, each announced on its own, as the full bench's
// steady phases do before its drain: the relay's statements are then prepared and planned on single events, not on the
// backlog.
// --statements prints each round's costliest statements; the drains then run on a cluster of their own (own-cluster.ts:
// initdb's settings with pg_stat_statements preloaded), whatever DATABASE_URL says.
//   bun run tests/bench/relay-drain.ts [--count 100000] [--rounds 1] [--raw] [--fillfactor 70] [--statements] [--trickle N]
import { parseArgs } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { otherReplica } from "../support/wakeups.ts";
import { cpuPerEvent, measureCpu } from "./cpu.ts";
import { startOwnPostgres } from "./own-cluster.ts";
import { insertGrantedEvents } from "./pipeline-load.ts";
import { rawPublish, seedAndDrainOutbox, waitForEmptyOutbox } from "./relay.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    count: { type: "string", default: "100000" },
    rounds: { type: "string", default: "1" },
    raw: { type: "boolean", default: false },
    fillfactor: { type: "string" },
    statements: { type: "boolean", default: false },
    trickle: { type: "string", default: "0" },
  },
});
const count = Number(values.count);
const tag = process.env.DRAIN_TAG ?? `drain_${Date.now().toString(36)}`;
const own = values.statements ? await startOwnPostgres() : undefined;
const adminUrl = own?.url ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const url = new URL(adminUrl);
url.pathname = `/${tag}`;
const env = {
  ...process.env,
  DATABASE_URL: url.toString(),
  NATS_URL: natsUrl,
  ENTITLEMENT_AUTH_DISABLED: "true",
  PORT: "0",
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  ENTITLEMENT_NATS_STREAM: `${tag}-events`,
  ENTITLEMENT_NATS_SUBJECT: `${tag}.events`,
  ENTITLEMENT_POINTS_NATS_STREAM: `${tag}-points`,
  ENTITLEMENT_POINTS_NATS_SUBJECT: `${tag}.points`,
};
const command = (process.env.BIN ?? "dist/entitlement").split(" ");

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`create database "${tag}"`);
const sql = postgres(url.toString(), { max: 2, onnotice: () => {} });
const nc = await connect({ servers: natsUrl });
try {
  const migrated = Bun.spawnSync([...command, "migrate"], { env });
  if (migrated.exitCode !== 0) throw new Error(`migrate failed: ${migrated.stderr.toString()}`);
  if (values.statements) await sql`create extension if not exists pg_stat_statements`;
  // An experiment's setting: room on each page for a row's next version, so an update can stay on its page.
  if (values.fillfactor) {
    await sql.unsafe(`alter table entitlement.outbox_events set (fillfactor = ${Number(values.fillfactor)})`);
  }
  const service = Bun.spawn([...command, "serve"], { env, stdout: "ignore", stderr: "inherit" });
  try {
    await Bun.sleep(1_500);
    await trickle(Number(values.trickle));
    for (let round = 1; round <= Number(values.rounds); round++) {
      const prefix = `${tag}r${round}`;
      let cpu = measureCpu({});
      const drain = await seedAndDrainOutbox({
        sql,
        count,
        prefix,
        timeoutMs: 300_000,
        stream: { nc, name: `${tag}-events` },
        progress: () => {},
        onCommitted: async () => {
          if (values.statements) await sql`select pg_stat_statements_reset()`;
          cpu = measureCpu({ service: service.pid });
        },
      });
      const report = cpu();
      const { own, rest } = cpuPerEvent(report, "service", drain.published);
      console.log(
        `relay, round ${round}: ${drain.eventsPerSecond.toFixed(0)} events/s (${drain.published} in ` +
          `${drain.seconds.toFixed(2)} s); machine ${(report.machineBusy * 100).toFixed(0)} % busy; CPU per event: ` +
          `service ${own.toFixed(1)} µs, everything else ${rest.toFixed(1)} µs`,
      );
      if (values.statements) await printStatements(drain.published);
    }
  } finally {
    service.kill("SIGTERM");
    await service.exited;
  }
  if (values.raw) {
    const raw = await rawPublish(nc, {
      stream: `${tag}-raw`,
      subject: `${tag}.raw`,
      count,
      window: 256,
      duplicateWindowMs: 120_000,
    });
    console.log(`raw publish: ${raw.eventsPerSecond.toFixed(0)} events/s`);
  }
} finally {
  const jsm = await jetstreamManager(nc);
  for (const stream of [`${tag}-events`, `${tag}-points`]) await jsm.streams.delete(stream).catch(() => false);
  await nc.close();
  await sql.end();
  await admin.unsafe(`drop database if exists "${tag}" with (force)`);
  await admin.end();
  own?.stop();
}

/** `n` events committed one at a time, about 300 a second, each announced; returns once the relay published them (a minute at most). */
async function trickle(n: number) {
  if (n <= 0) return;
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    await insertGrantedEvents(sql, { prefix: `${tag}t`, first: i + 1, count: 1, sku: "sku-trickle" });
    otherReplica(sql).committed({ events: true });
    await Bun.sleep(Math.max(0, started + ((i + 1) * 1000) / 300 - performance.now()));
  }
  await waitForEmptyOutbox(sql, n, Date.now() + 60_000, () => {});
  console.log(`trickle: ${n} events committed one at a time and published`);
}

/** The round's four costliest statements of this database: calls, execution time per event and per call, buffers. */
async function printStatements(events: number) {
  const top = await sql<{ calls: string; total: number; hit: string; read: string; query: string }[]>`
    select calls::text, total_exec_time as total, shared_blks_hit::text as hit, shared_blks_read::text as read, query
    from pg_stat_statements join pg_database d on d.oid = dbid
    where d.datname = current_database() and query not ilike '%pg_stat_statements%'
    order by total_exec_time desc limit 4`;
  for (const s of top) {
    const calls = Number(s.calls);
    const perEvent = ((s.total * 1000) / events).toFixed(1);
    const text = s.query.replace(/\s+/g, " ").slice(0, 90);
    console.log(
      `  ${perEvent} µs/event, ${calls} calls × ${(s.total / calls).toFixed(2)} ms, ` +
        `${Math.round(Number(s.hit) / calls)} hit + ${Math.round(Number(s.read) / calls)} read per call: ${text}`,
    );
  }
}
