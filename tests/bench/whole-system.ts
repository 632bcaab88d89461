// The whole system under the API's load, build against build: grants through the API at c=16 (autocannon) while the
// relay, the consumer and the delivery worker (log channel) run beside it, on a PostgreSQL cluster and a nats-server of
// this run's own (stock settings), the builds' executables alternating, in the opposite order every other round (A B,
// B A, A B …): a machine whose speed drifts weighs on both alike, and so does the lead of the build that goes first in
// a round (3–10 % in each of four rounds of two builds of about equal cost, docs/benchmarks.md "Notification's storing
// statement"). Each run measures, one after the other on the same cluster: the database's pace for a grant (pgbench
// of the least a grant writes, as the full bench), the API alone (NATS off) and the whole system; it reports grants/s
// and ÷ pace, the machine's busy share, core-ms per grant (machine-wide and per service; the whole system's less the
// API alone's is what the pipeline behind the API costs at that load), the statements per grant (pg_stat_statements:
// how full the pipeline's batches are), and whether the pipeline kept up (SENT ÷ granted when the load ends, and after
// it settles). With one build it measures that build alone. At the end, each build's rounds side by side, with the
// median of its API alone ÷ pace (the target is read as a median: one round's window moves with the machine).
//   bun run tests/bench/whole-system.ts --dist A=dist-before --dist B=dist [--rounds 3] [--seconds 15] [--connections 16]
//     [--rate 300 …]   (then commit → SENT at each steady rate, 10 s, per run)
//     [--latency-only]  (no pace and no API alone: the whole system's load, then the rates; for a bisection)
// A folder holds `entitlement` and `notification` (`bun run build --outdir DIR` of a checkout); `--dist B=dist,KEY=VALUE`
// sets variables for both services of that build (one executable, two settings).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { apiAloneEnv, createPaceDatabase, runPace } from "./api-alone.ts";
import { busySeconds, type CpuReport, measureCpu } from "./cpu.ts";
import { type E2eResult, measureEndToEnd } from "./e2e.ts";
import { runGrantLoad, type ThroughputResult } from "./grants.ts";
import { removeOwnInfra, startOwnNats, startOwnPostgres } from "./own-cluster.ts";
import * as stack from "./stack.ts";
import { median } from "./stats.ts";
import { sampleWaits, type Waits, waitShares } from "./waits.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    dist: { type: "string", multiple: true, default: ["this=dist"] },
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "15" },
    connections: { type: "string", default: "16" },
    rate: { type: "string", multiple: true, default: [] },
    "latency-only": { type: "boolean", default: false },
  },
});
/** `name=dir[,KEY=VALUE…]`: the executables of `dir`, with those variables set for both services. */
const builds = (values.dist ?? []).map((spec) => {
  const [head = "", ...vars] = spec.split(",");
  const [name, dir] = head.includes("=") ? (head.split("=", 2) as [string, string]) : [head, head];
  const env = Object.fromEntries(vars.map((v) => [v.slice(0, v.indexOf("=")), v.slice(v.indexOf("=") + 1)]));
  return { name, env, entitlement: resolve(dir, "entitlement"), notification: resolve(dir, "notification") };
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const connections = Number(values.connections);
/** Steady rates at which commit → SENT is measured after the load (10 s each), e.g. the latency targets' 300. */
const rates = (values.rate ?? []).map(Number);
/** What --latency-only leaves unmeasured (a pace of 0): no throughput, no CPU; the lines leave their figures out. */
const NOT_MEASURED = {
  load: { connections: 0, rps: 0, p50Ms: 0, p99Ms: 0, ok: 0, non2xx: 0, errors: 0 },
  cpu: { machineBusy: 0, seconds: {}, elapsedSeconds: 0 },
};

type Run = {
  build: string;
  round: number;
  /** The database's pace for a grant (pgbench of the least a grant writes), run right before this build's load. */
  pace: ThroughputResult;
  paceCpu: CpuReport;
  /** The API alone (NATS off: no relay, no Notification) on a database of its own, right before the whole system. */
  alone: ThroughputResult;
  aloneCpu: CpuReport;
  load: ThroughputResult;
  cpu: CpuReport;
  /** Statements run per grant during the load, the most frequent first (pg_stat_statements), with their mean time. */
  statements: Statement[];
  /** The same during the steady rates (calls per rate, not per grant), where a slow plan shows in the mean time. */
  rateStatements: Statement[];
  /** At each steady rate, what may have kept dead rows from being cleaned (sampleHorizon) and the backends' waits. */
  horizons: RateHorizon[];
  sentAtEnd: number;
  sentSettled: number;
  granted: number;
  e2e: E2eResult[];
};

const dir = mkdtempSync(join(tmpdir(), "bench-whole-"));
const pg = await startOwnPostgres();
const nats = await startOwnNats(dir);
const runs: Run[] = [];
try {
  for (let round = 1; round <= rounds; round++) {
    for (const build of round % 2 === 1 ? builds : [...builds].reverse()) {
      const run = await measure(build, round);
      runs.push(run);
      console.error(line(run));
    }
  }
} finally {
  await nats.stop();
  pg.stop();
  removeOwnInfra(dir);
}
console.log(JSON.stringify({ seconds, connections, runs }, null, 2));
for (const build of builds) {
  const mine = runs.filter((r) => r.build === build.name);
  const ratios = mine.map((r) => (r.load.rps / r.pace.rps).toFixed(2)).join(" / ");
  const paced = mine.some((r) => r.pace.rps > 0) ? `; ÷ pace ${ratios}` : "";
  console.error(`${build.name}: grants/s ${mine.map((r) => r.load.rps.toFixed(0)).join(" / ")}${paced}`);
  if (mine.some((r) => r.alone.rps > 0 && r.pace.rps > 0)) {
    // The API alone's target is read as a median: one 15-second window a round moves by a quarter on a noisy machine.
    const alone = mine.map((r) => r.alone.rps / r.pace.rps);
    console.error(
      `${build.name}: API alone ÷ pace ${alone.map((x) => x.toFixed(2)).join(" / ")} (median ${median(alone).toFixed(2)})`,
    );
  }
}

async function measurePace(): Promise<{ load: ThroughputResult; cpu: CpuReport }> {
  const name = `bench_pace_${Date.now() % 100000}`;
  const url = await createPaceDatabase(pg.url, name);
  try {
    const cpu = measureCpu({});
    const load = await runPace(url, connections, seconds);
    return { load, cpu: cpu() };
  } finally {
    await stack.dropDatabase(pg.url, name);
  }
}

/** Entitlement's variables for a run: the bench's, with no rate limit and no scheduler beside the load. */
function entitlementEnv(names: stack.Names, common: Record<string, string>, auth: stack.ApiAuth) {
  return {
    ...stack.entitlementEnv(names, common, auth),
    ENTITLEMENT_RATE_LIMIT_ENABLED: "false",
    ENTITLEMENT_SCHEDULER_ENABLED: "false",
  };
}

function migrateWith(binary: string, env: Record<string, string>): void {
  const migrate = Bun.spawnSync([binary, "migrate"], { env: { ...process.env, ...env } });
  if (migrate.exitCode !== 0) throw new Error(`${binary} migrate failed: ${migrate.stderr.toString()}`);
}

async function measureAlone(build: (typeof builds)[number]): Promise<{ load: ThroughputResult; cpu: CpuReport }> {
  const tag = `alone${Date.now() % 100000}`;
  const names = stack.benchNames(tag);
  const url = await stack.createDatabase(pg.url, names.database);
  const auth = stack.apiAuth();
  const env = apiAloneEnv(stack.entitlementEnv(names, { DATABASE_URL: url, LOG_LEVEL: "warn", ...build.env }, auth));
  migrateWith(build.entitlement, env);
  const service = await stack.startService("entitlement", build.entitlement, env, join(dir, `${tag}.log`));
  try {
    const load = { url: service.url, headers: auth.headers, connections, tag };
    await runGrantLoad({ ...load, seconds: 1 });
    const cpu = measureCpu({ entitlement: service.pid });
    const result = await runGrantLoad({ ...load, seconds });
    return { load: result, cpu: cpu() };
  } finally {
    await service.stop();
    await stack.dropDatabase(pg.url, names.database);
  }
}

async function measure(build: (typeof builds)[number], round: number): Promise<Run> {
  const latencyOnly = values["latency-only"] === true;
  const { load: pace, cpu: paceCpu } = latencyOnly ? NOT_MEASURED : await measurePace();
  const { load: alone, cpu: aloneCpu } = latencyOnly ? NOT_MEASURED : await measureAlone(build);
  const tag = `w${round}${build.name.replace(/\W/g, "")}${Date.now() % 100000}`;
  const names = stack.benchNames(tag);
  const url = await stack.createDatabase(pg.url, names.database);
  const common = { DATABASE_URL: url, NATS_URL: nats.url, LOG_LEVEL: "warn", ...build.env };
  const auth = stack.apiAuth();
  const eEnv = entitlementEnv(names, common, auth);
  const nEnv = stack.notificationEnv(names, common, true);
  migrateWith(build.entitlement, eEnv);
  migrateWith(build.notification, nEnv);
  const logs = (name: string) => join(dir, `${tag}-${name}.log`);
  const entitlement = await stack.startService("entitlement", build.entitlement, eEnv, logs("entitlement"));
  const notification = await stack.startService("notification", build.notification, nEnv, logs("notification"));
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const load = { url: entitlement.url, headers: auth.headers, connections, tag };
    await runGrantLoad({ ...load, seconds: 1 });
    await settled(sql, 30_000);
    await sql`create extension if not exists pg_stat_statements`;
    await sql`select pg_stat_statements_reset()`;
    const cpu = measureCpu({ entitlement: entitlement.pid, notification: notification.pid });
    const before = await counts(sql);
    const result = await runGrantLoad({ ...load, seconds });
    const report = cpu();
    const end = await counts(sql);
    const statements = await statementsPerGrant(sql, names.database, result.ok);
    await settled(sql, 60_000);
    const after = await counts(sql);
    const granted = end.granted - before.granted;
    if (rates.length > 0) await sql`select pg_stat_statements_reset()`;
    const { e2e, horizons } = await measureRates(sql, url, load);
    const rateStatements = rates.length > 0 ? await statementsPerGrant(sql, names.database, rates.length) : [];
    return {
      build: build.name,
      round,
      pace,
      paceCpu,
      alone,
      aloneCpu,
      statements,
      rateStatements,
      horizons,
      load: result,
      cpu: report,
      granted,
      sentAtEnd: (end.sent - before.sent) / Math.max(1, granted),
      sentSettled: (after.sent - before.sent) / Math.max(1, granted),
      e2e,
    };
  } finally {
    await sql.end();
    await notification.stop();
    await entitlement.stop();
    await deleteRunStreams(names);
    await stack.dropDatabase(pg.url, names.database);
  }
}

type Statement = { calls: number; meanMs: number; query: string };

/** The statements run per grant during the load, the most frequent first (pg_stat_statements of `database`). */
async function statementsPerGrant(sql: postgres.Sql, database: string, grants: number) {
  return await sql<Statement[]>`
    select s.calls::float8 / greatest(1, ${grants}) as calls, s.mean_exec_time as "meanMs",
           left(regexp_replace(s.query, ${"\\s+"}, ' ', 'g'), 90) as query
    from pg_stat_statements s join pg_database d on d.oid = s.dbid
    where d.datname = ${database} and s.query !~* ${"pg_stat_statements|count\\(\\*\\)"}
    order by s.calls desc limit 8`;
}

/** Commit → SENT at each of `rates`, 10 s each, the pipeline settled after each; the horizon sampled meanwhile. */
async function measureRates(
  sql: postgres.Sql,
  databaseUrl: string,
  load: { url: string; headers: Record<string, string>; connections: number; tag: string },
): Promise<{ e2e: E2eResult[]; horizons: RateHorizon[] }> {
  const e2e: E2eResult[] = [];
  const horizons: RateHorizon[] = [];
  for (const [i, rate] of rates.entries()) {
    const prefix = `e2e${i}-${load.tag}`;
    const sampled = sampleHorizon(databaseUrl);
    const stopWaits = sampleWaits(databaseUrl, ["entitlement", "notification"], 50);
    e2e.push(await measureEndToEnd({ sql, ...load, rate, seconds: 10, prefix, timeoutMs: 30_000 }));
    horizons.push({ ...(await sampled()), waits: await stopWaits() });
    await settled(sql, 30_000);
  }
  return { e2e, horizons };
}

/**
 * While a rate runs, every 200 ms: whether an autovacuum worker is at work (and on what), and the longest any backend
 * has held the snapshot that keeps dead rows visible (`backend_xmin`, since its transaction began). While one is held,
 * a claim cannot mark the entries of rows deleted after it as dead, and steps over all of them at every claim.
 */
type Horizon = { samples: number; autovacuumShare: number; longestHeldMs: number; autovacuum: string[] };

/**
 * A rate's horizon and what each service's backends inside a statement were doing meanwhile (waits.ts, every 50 ms): a
 * statement slower beside the pipeline than alone shows there as lock or buffer waits, or as none.
 */
type RateHorizon = Horizon & { waits: Waits };

function sampleHorizon(url: string): () => Promise<Horizon> {
  const db = postgres(url, { max: 1, onnotice: () => {} });
  const seen = new Set<string>();
  let samples = 0;
  let withAutovacuum = 0;
  let longest = 0;
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const rows = await db<{ kind: string; heldMs: number | null; query: string }[]>`
        select backend_type as kind, left(regexp_replace(query, ${"\\s+"}, ' ', 'g'), 60) as query,
               case when backend_xmin is not null
                    then extract(epoch from now() - coalesce(xact_start, now()))::float8 * 1000 end as "heldMs"
        from pg_stat_activity where pid <> pg_backend_pid()`;
      samples += 1;
      const workers = rows.filter((r) => r.kind === "autovacuum worker");
      if (workers.length > 0) withAutovacuum += 1;
      for (const w of workers) seen.add(w.query);
      for (const r of rows) longest = Math.max(longest, r.heldMs ?? 0);
      await Bun.sleep(200);
    }
  })();
  return async () => {
    stop = true;
    await loop;
    await db.end();
    return {
      samples,
      autovacuumShare: withAutovacuum / Math.max(1, samples),
      longestHeldMs: longest,
      autovacuum: [...seen],
    };
  };
}

/** The run's streams, deleted from the run's nats-server. */
async function deleteRunStreams(names: stack.Names): Promise<void> {
  const nc = await stack.connectBenchNats(nats.url);
  await stack.deleteStreams(nc, [
    names.stream,
    `${names.stream}-points`,
    names.matches.stream,
    ...names.advisories.map((a) => a.stream),
  ]);
  await nc.close();
}

/** Entitlement rows granted and notifications SENT so far (both schemas live in the run's one database). */
async function counts(sql: postgres.Sql): Promise<{ granted: number; sent: number }> {
  const [row] = await sql<{ granted: number; sent: number }[]>`
    select (select count(*) from entitlement.entitlements)::int as granted,
           (select count(*) from notification.notifications where status = 'SENT')::int as sent`;
  return row ?? { granted: 0, sent: 0 };
}

/** Waits until every stored event's notification is SENT and the outbox is drained, or `ms` passed. */
async function settled(sql: postgres.Sql, ms: number): Promise<void> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const [row] = await sql<{ left: number }[]>`
      select (select count(*) from entitlement.outbox_events where status <> 'PUBLISHED')::int
           + (select count(*) from notification.notifications where status <> 'SENT')::int as left`;
    if (row?.left === 0) return;
    await Bun.sleep(100);
  }
}

/** Milliseconds of CPU per unit of work (a grant, a transaction), as the line prints them. */
function msEach(cpuSeconds: number, count: number): string {
  return ((cpuSeconds * 1e3) / Math.max(1, count)).toFixed(3);
}

function line(r: Run): string {
  const busy = busySeconds(r.cpu);
  const perGrant = (s: number) => msEach(s, r.load.ok);
  const e = r.cpu.seconds.entitlement ?? 0;
  const n = r.cpu.seconds.notification ?? 0;
  const h = r.cpu.seconds.harness ?? 0;
  const paceTransactions = r.pace.rps * r.paceCpu.elapsedSeconds;
  return [
    `${r.build} round ${r.round}: ${r.load.rps.toFixed(0)} grants/s (p99 ${r.load.p99Ms} ms, non-2xx ${r.load.non2xx})`,
    ...(r.pace.rps > 0
      ? [
          `API alone ${r.alone.rps.toFixed(0)} grants/s, ${msEach(busySeconds(r.aloneCpu), r.alone.ok)} core-ms/grant (entitlement ${msEach(r.aloneCpu.seconds.entitlement ?? 0, r.alone.ok)})`,
          `pace ${r.pace.rps.toFixed(0)} tx/s (busy ${(r.paceCpu.machineBusy * 100).toFixed(1)} %, ${msEach(busySeconds(r.paceCpu), paceTransactions)} core-ms/tx), whole ÷ pace ${(r.load.rps / r.pace.rps).toFixed(2)}`,
        ]
      : []),
    `busy ${(r.cpu.machineBusy * 100).toFixed(1)} %`,
    `core-ms/grant: all ${perGrant(busy)}, entitlement ${perGrant(e)}, notification ${perGrant(n)}, autocannon ${perGrant(h)}, rest ${perGrant(busy - e - n - h)}`,
    `SENT ÷ granted at the end ${r.sentAtEnd.toFixed(2)}, settled ${r.sentSettled.toFixed(2)}`,
    ...r.e2e.map(
      (e, i) =>
        `commit → SENT at ${e.rate}/s p50 ${e.p50Ms} ms, p99 ${e.p99Ms} ms (${e.delivered}/${e.sent}); stages p50/p99 ms: ` +
        (["relay", "consume", "deliver", "total"] as const)
          .map((k) => `${k} ${e.stages[k].p50}/${e.stages[k].p99}`)
          .join(", ") +
        horizonText(r.horizons[i]),
    ),
  ]
    .join("; ")
    .concat(
      r.statements
        .map((st) => `\n    ${st.calls.toFixed(3)} per grant, ${st.meanMs.toFixed(2)} ms: ${st.query}`)
        .join(""),
    )
    .concat(
      r.rateStatements
        .map((st) => `\n    at the rates, ${st.calls.toFixed(0)} a rate, ${st.meanMs.toFixed(2)} ms: ${st.query}`)
        .join(""),
    );
}

/** A rate's horizon, for its line: how often autovacuum ran, on what, and the longest-held snapshot. */
function horizonText(h: RateHorizon | undefined): string {
  if (!h) return "";
  const on = h.autovacuum.length > 0 ? ` (${h.autovacuum.join(" | ")})` : "";
  const waits = Object.entries(h.waits).map(([service, events]) => {
    const { samples, shares } = waitShares(events, 4);
    return `${service} (${samples}): ${shares.join(", ")}`;
  });
  return `; autovacuum in ${(h.autovacuumShare * 100).toFixed(0)} % of samples${on}, snapshot held up to ${h.longestHeldMs.toFixed(0)} ms; waits in a statement ${waits.join("; ") || "none sampled"}`;
}
