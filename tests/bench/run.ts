// `bun run bench`: builds both executables, starts them on a fresh database of a PostgreSQL cluster of its own (stock
// settings, bench-postgres.ts; DATABASE_URL's server with --use-database-url) and fresh stream names on the local NATS,
// runs every phase (docs/benchmarks.md), prints one table and writes the figures as JSON.
//   bun run bench [--quick] [...]   (see options.ts; NATS_URL as for the tests)
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { Writable } from "node:stream";
import postgres from "postgres";
import { measureApiAlone } from "./api-alone.ts";
import { type BenchPostgres, describeBenchPostgres, openBenchPostgres } from "./bench-postgres.ts";
import { type CpuReport, coresOf, cpuPerEvent, measureCpu, measurePostgresCpu } from "./cpu.ts";
import { measureEndToEnd } from "./e2e.ts";
import { measureExpiryLateness } from "./expiry.ts";
import { runGrantLoad, type ThroughputResult } from "./grants.ts";
import { measureGrowth } from "./growth.ts";
import { DELETED_TABLES, type DeletedTable } from "./growth-data.ts";
import { fillBacklog, measureIngest } from "./ingest.ts";
import { jwtAuthSupported, measureJwtAuth, startBenchIdp } from "./jwt-auth.ts";
import { PLAYERS, publishMatches } from "./matches.ts";
import { type BenchOptions, parseBenchOptions } from "./options.ts";
import { runPgbench } from "./pgbench.ts";
import { measurePipelineCost, type PipelineResult } from "./pipeline.ts";
import { pipelineRows, renderPipelineTable } from "./pipeline-report.ts";
import { measurePlayers } from "./players-phase.ts";
import { measurePoints } from "./points-phase.ts";
import { READ_USERS, runReadLoad, seedReadSet } from "./reads.ts";
import { rawPublish, seedAndDrainOutbox } from "./relay.ts";
import { measureReplicas, replicaRows } from "./replicas.ts";
import { type Figure, machine, renderTable, saveReport } from "./report.ts";
import * as stack from "./stack.ts";
import { summarize } from "./stats.ts";
import { mean, measureTracingCost } from "./tracing.ts";

const givenDatabaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const DUPLICATE_WINDOW_MS = 120_000;

const began = performance.now();
const progress = (line: string) => console.log(`[bench ${((performance.now() - began) / 1000).toFixed(1)}s] ${line}`);
let lastDetail = 0;
/** In-phase counters, at most one line every 2s. */
const detail = (line: string) => {
  if (performance.now() - lastDetail < 2_000) return;
  lastDetail = performance.now();
  progress(`  ${line}`);
};

/** Waits until every outbox event is published and every notification stored and settled. */
async function settle(sql: postgres.Sql, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [s] = await sql<{ outbox: number; open: number; events: number; notifications: number }[]>`
      select (select count(*) from entitlement.outbox_events)::int as events,
             (select count(*) from entitlement.outbox_events where status in ('PENDING', 'IN_FLIGHT'))::int as outbox,
             (select count(*) from notification.notifications)::int as notifications,
             (select count(*) from notification.notifications where status in ('PENDING', 'PROCESSING'))::int as open`;
    if (s && s.outbox === 0 && s.open === 0 && s.notifications >= s.events) return true;
    detail(`settling: ${s?.outbox} outbox pending, ${s?.notifications}/${s?.events} notifications, ${s?.open} open`);
    await Bun.sleep(250);
  }
  progress(`did not settle within ${timeoutMs / 1000}s; measuring anyway`);
  return false;
}

/** The phases on a cluster of the bench's own, stopped and removed however the run ends (Ctrl-C included). */
async function main(options: BenchOptions): Promise<void> {
  progress(options.useDatabaseUrl ? "PostgreSQL: DATABASE_URL's server" : "PostgreSQL: starting a cluster of its own");
  const target = await openTarget(options);
  progress(describeBenchPostgres(target));
  const interrupted = (signal: NodeJS.Signals) => {
    target.dispose(false);
    console.error(`bench interrupted (${signal}); its PostgreSQL cluster is stopped and removed`);
    process.exit(130);
  };
  process.once("SIGINT", interrupted).once("SIGTERM", interrupted);
  try {
    await runPhases(options, target);
  } finally {
    const kept = target.dispose(options.keep);
    if (kept) progress(`--keep: the stopped cluster is in ${kept} (pg_ctl -D ${kept}/pg start)`);
  }
}

async function runPhases(options: BenchOptions, target: BenchPostgres): Promise<void> {
  const { adminUrl } = target;
  const tag = Date.now().toString(36);
  const names = stack.benchNames(tag);
  const runDir = join(stack.root, ".data/bench", tag);
  mkdirSync(runDir, { recursive: true });
  progress(`building executables into .data/bench/dist`);
  const bin = await stack.buildBinaries();
  progress(`creating database ${names.database}, stream ${names.stream}`);
  const databaseUrl = await stack.createDatabase(adminUrl, names.database);
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
  const nc = await stack.connectBenchNats(natsUrl);
  const auth = stack.apiAuth();
  const common = { DATABASE_URL: databaseUrl, NATS_URL: natsUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
  // Entitlement also accepts the tokens of an OpenID provider in the harness, for the JWT auth phase.
  const jwtIdp = auth.mode === "bearer token" && jwtAuthSupported() ? await startBenchIdp() : undefined;
  const entitlementEnv = { ...stack.entitlementEnv(names, common, auth), ...jwtIdp?.env };
  const notificationEnv = (delivery: boolean) => stack.notificationEnv(names, common, delivery);
  const running: stack.Service[] = [];
  const figures: Figure[] = [];
  const results: Record<string, unknown> = { auth: auth.mode };
  let pipeline: PipelineResult | undefined;
  const add = (name: string, value: number, unit: string, target?: Figure["target"], unmeasured?: string) =>
    figures.push({ name, value, unit, ...(target ? { target } : {}), ...(unmeasured ? { unmeasured } : {}) });
  const settleMs = options.settleTimeout * 1000;
  try {
    for (const service of ["entitlement", "notification"] as const) {
      const migrate = Bun.spawnSync([bin[service], "migrate"], { env: { ...process.env, ...common } });
      if (migrate.exitCode !== 0) throw new Error(`${service} migrate failed: ${migrate.stderr.toString()}`);
    }
    // First, while nothing else runs: the API alone against the database's pace (api-alone.ts).
    const alone = await measureApiAlone({
      adminUrl,
      binary: bin.entitlement,
      names,
      auth,
      logFile: join(runDir, "entitlement-alone.log"),
      seconds: options.duration,
      tag,
      progress,
    });
    results.apiAlone = alone.result;
    figures.push(...alone.figures);
    const log = (name: string) => join(runDir, `${name}.log`);
    const starts = options.quick ? 3 : 7;
    progress(`footprint: exec → /readyz 200, ${starts} alternating starts of each service on the migrated database`);
    const ready = await stack.readyTimes(
      {
        entitlement: (n) => stack.startService("entitlement", bin.entitlement, entitlementEnv, log(`ready-e${n}`)),
        notification: (n) =>
          stack.startService("notification", bin.notification, notificationEnv(true), log(`ready-n${n}`)),
      },
      starts,
    );
    results.ready = ready;
    for (const [name, times] of Object.entries(ready)) {
      const s = summarize(times);
      add(
        `ready: ${name} (median of ${s.n} starts, ${Math.min(...times).toFixed(0)}–${s.max.toFixed(0)})`,
        s.p50,
        "ms",
        {
          op: "<=",
          value: 200,
        },
      );
    }
    const entitlement = await stack.startService("entitlement", bin.entitlement, entitlementEnv, log("entitlement"));
    running.push(entitlement);
    let notification = await stack.startService(
      "notification",
      bin.notification,
      notificationEnv(true),
      log("notification"),
    );
    running.push(notification);
    await Bun.sleep(options.quick ? 500 : 3_000);
    add("RSS idle: entitlement", entitlement.rssMb(), "MiB", { op: "<=", value: 80 });
    add("RSS idle: notification", notification.rssMb(), "MiB", { op: "<=", value: 80 });

    const throughput: Record<string, ThroughputResult & { cpu: CpuReport }> = {};
    const peakRss = stack.sampleRss([entitlement, notification]);
    progress(`grant throughput: warm-up`);
    await runGrantLoad({ url: entitlement.url, headers: auth.headers, connections: 16, seconds: 1, tag });
    for (const c of options.connections) {
      await settle(sql, settleMs);
      progress(`grant throughput: API, ${c} connections, ${options.duration}s (autocannon)`);
      const pids = { entitlement: entitlement.pid, notification: notification.pid };
      let cpu = measureCpu(pids);
      const api = {
        ...(await runGrantLoad({
          url: entitlement.url,
          headers: auth.headers,
          connections: c,
          seconds: options.duration,
          tag,
        })),
        cpu: cpu(),
      };
      await settle(sql, settleMs);
      progress(`grant throughput: pgbench, ${c} clients, ${options.duration}s (same write set)`);
      cpu = measureCpu(pids);
      const pg = { ...(await runPgbench({ databaseUrl, clients: c, seconds: options.duration })), cpu: cpu() };
      throughput[`api_c${c}`] = api;
      throughput[`pgbench_c${c}`] = pg;
      add(`grants/s API c=${c} (p50 ${api.p50Ms} ms, p99 ${api.p99Ms} ms, non-2xx ${api.non2xx})`, api.rps, "req/s");
      if (pg.unmeasured) {
        progress(`grant throughput: pgbench, ${c} clients, measured nothing: ${pg.unmeasured}`);
        add(`grants/s pgbench c=${c}`, Number.NaN, "tx/s", undefined, pg.unmeasured);
        add(`API ÷ pgbench c=${c}`, Number.NaN, "", { op: ">=", value: 0.8 }, pg.unmeasured);
      } else {
        add(`grants/s pgbench c=${c} (p50 ${pg.p50Ms.toFixed(1)} ms, p99 ${pg.p99Ms.toFixed(1)} ms)`, pg.rps, "tx/s");
        add(`API ÷ pgbench c=${c}`, api.rps / pg.rps, "", { op: ">=", value: 0.8 });
      }
      const pace = alone.result.pace;
      if (c === 16) {
        // The whole system (relay, consumer and delivery running beside the API) against the database's pace.
        add(
          `whole system ÷ database's pace c=${c} (${api.rps.toFixed(0)} ÷ ${pace.rps.toFixed(0)})`,
          pace.unmeasured ? Number.NaN : api.rps / pace.rps,
          "",
          { op: ">=", value: 0.6 },
          pace.unmeasured,
        );
      }
      add(
        `machine CPU busy, API c=${c} (cores: autocannon ${coresOf(api.cpu, "harness")}, entitlement ${coresOf(api.cpu, "entitlement")}, notification ${coresOf(api.cpu, "notification")})`,
        api.cpu.machineBusy * 100,
        "%",
      );
      add(
        `machine CPU busy, pgbench c=${c} (cores: entitlement ${coresOf(pg.cpu, "entitlement")}, notification ${coresOf(pg.cpu, "notification")})`,
        pg.cpu.machineBusy * 100,
        "%",
      );
    }
    results.throughput = throughput;
    await settle(sql, settleMs);
    if (jwtIdp) {
      const c = options.connections[0] ?? 16;
      progress(`JWT auth: grants/s with a provider's token and with a static token, ${c} connections, alternating`);
      const jwt = await measureJwtAuth({
        idp: jwtIdp.idp,
        url: entitlement.url,
        staticHeaders: auth.headers,
        connections: c,
        seconds: options.duration,
        rounds: options.quick ? 1 : 2,
        tag,
        settle: () => settle(sql, settleMs),
      });
      results.jwtAuth = jwt;
      const detailOf = `JWT ${jwt.jwt.toFixed(0)}, static ${jwt.static.toFixed(0)} grants/s, mean of ${jwt.rounds}, non-2xx ${jwt.non2xx}`;
      add(`grants/s JWT ÷ static token c=${c} (${detailOf})`, jwt.ratio, "", { op: ">=", value: 0.9 });
      await settle(sql, settleMs);
    }

    const readPrefix = `read-${tag}`;
    await seedReadSet(sql, readPrefix);
    const reads: Record<string, ThroughputResult> = {};
    for (const kind of ["check", "list"] as const) {
      progress(`reads: ${kind}, 64 connections, ${options.duration}s over ${READ_USERS} users (autocannon)`);
      const r = await runReadLoad({
        url: entitlement.url,
        headers: auth.headers,
        connections: 64,
        seconds: options.duration,
        prefix: readPrefix,
        kind,
      });
      reads[kind] = r;
      add(`reads/s ${kind} c=64 (p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, non-2xx ${r.non2xx})`, r.rps, "req/s");
    }
    results.reads = reads;
    const loadRss = peakRss();
    add("RSS under load: entitlement", loadRss.entitlement ?? 0, "MiB");
    add("RSS under load: notification", loadRss.notification ?? 0, "MiB");

    // Commit → SENT through the API at the everyday rate (p50 and p99 targets), then at a peak rate (p99 target).
    const e2eRuns = [
      { rate: options.rate, p50: 10, p99: 30 },
      { rate: options.peakRate, p50: undefined, p99: 60 },
    ];
    const e2eResults: Record<string, unknown> = {};
    for (const [i, run] of e2eRuns.entries()) {
      progress(`end-to-end: ${run.rate} grants/s for ${options.rateDuration}s`);
      const e2e = await measureEndToEnd({
        sql,
        url: entitlement.url,
        headers: auth.headers,
        rate: run.rate,
        seconds: options.rateDuration,
        prefix: `e2e${i}-${tag}`,
        timeoutMs: settleMs,
      });
      e2eResults[`at_${run.rate}`] = e2e;
      const p50Target = run.p50 === undefined ? undefined : { op: "<=" as const, value: run.p50 };
      add(`end-to-end p50 at ${run.rate}/s`, e2e.p50Ms, "ms", p50Target);
      add(`end-to-end p95 at ${run.rate}/s`, e2e.p95Ms, "ms");
      add(`end-to-end p99 at ${run.rate}/s (${e2e.delivered}/${e2e.sent} delivered)`, e2e.p99Ms, "ms", {
        op: "<=",
        value: run.p99,
      });
      await settle(sql, settleMs);
    }
    results.e2e = e2eResults;

    progress(`relay drain: stopping notification, inserting ${options.events} PENDING outbox rows`);
    await notification.stop();
    running.splice(running.indexOf(notification), 1);
    let cpu = measureCpu({});
    let postgresCpu: ReturnType<typeof measurePostgresCpu> | undefined;
    const drain = await seedAndDrainOutbox({
      sql,
      count: options.events,
      prefix: `drain-${tag}`,
      timeoutMs: 600_000,
      stream: { nc, name: names.stream },
      progress: detail,
      onCommitted: () => {
        cpu = measureCpu({ entitlement: entitlement.pid });
        if (target.postmasterPid) postgresCpu = measurePostgresCpu(target.postmasterPid);
      },
    });
    const drainCpu = cpu();
    const drainPostgres = postgresCpu?.();
    progress(`relay drain: raw publish of ${options.events} messages, windows of ${options.publishWindow}`);
    cpu = measureCpu({});
    const raw = await rawPublish(nc, {
      stream: `bench-${tag}-raw`,
      subject: `bench.${tag}.raw`,
      count: options.events,
      window: options.publishWindow,
      duplicateWindowMs: DUPLICATE_WINDOW_MS,
    });
    results.relay = { drain, raw };
    add(`relay drain (${drain.published} events)`, drain.eventsPerSecond, "events/s");
    add(`raw publish (window ${options.publishWindow})`, raw.eventsPerSecond, "events/s");
    add("relay ÷ raw publish", drain.eventsPerSecond / raw.eventsPerSecond, "", { op: ">=", value: 0.6 });
    reportEventCpu(add, "relay drain", drainCpu, drain, "entitlement");
    // What "everything else" was made of, on the bench's own cluster: the relay's and the harness's queries, autovacuum
    // (the phases before leave it work on the same tables), the cluster's background processes.
    for (const [kind, seconds] of drainPostgres ?? [])
      add(`CPU per event, relay drain: PostgreSQL ${kind}`, (seconds / Math.max(1, drain.published)) * 1e6, "µs");
    reportEventCpu(add, "raw publish", cpu(), { ...raw, published: options.events }, "harness");

    progress(`notification ingest: backlog of ${options.events} events, starting notification (delivery off)`);
    await fillBacklog(nc, {
      stream: names.stream,
      durable: names.durable,
      subject: names.subject,
      count: options.events,
      window: options.publishWindow,
    });
    const rssDuringIngest = { peak: 0 };
    const ingest = await measureIngest({
      sql,
      count: options.events,
      timeoutMs: 600_000,
      progress: (line) => {
        rssDuringIngest.peak = Math.max(rssDuringIngest.peak, notification.rssMb());
        detail(line);
      },
      start: async () => {
        notification = await stack.startService(
          "notification",
          bin.notification,
          notificationEnv(false),
          log("notification-ingest"),
        );
        running.push(notification);
        return notification;
      },
    });
    results.ingest = { eventsPerSecond: ingest.eventsPerSecond, seconds: ingest.seconds, stored: ingest.stored };
    add(`ingest (${ingest.stored} events)`, ingest.eventsPerSecond, "events/s", { op: ">=", value: 5000 });
    add("RSS during ingest: notification", Math.max(rssDuringIngest.peak, notification.rssMb()), "MiB");

    progress(`matchmaking ingest: backlog of ${options.events} matches of ${PLAYERS} players, starting notification`);
    await notification.stop();
    running.splice(running.indexOf(notification), 1);
    await publishMatches(nc, {
      subject: names.matches.subject,
      count: options.events,
      window: options.publishWindow,
      prefix: `match-${tag}`,
    });
    const matchIngest = await measureIngest({
      sql,
      count: options.events * PLAYERS,
      type: "MatchFound",
      timeoutMs: 600_000,
      progress: detail,
      start: async () => {
        notification = await stack.startService(
          "notification",
          bin.notification,
          notificationEnv(false),
          log("notification-match-ingest"),
        );
        running.push(notification);
        return notification;
      },
    });
    const matchesPerSecond = matchIngest.stored / PLAYERS / matchIngest.seconds;
    results.matchIngest = {
      eventsPerSecond: matchesPerSecond,
      notificationsPerSecond: matchIngest.eventsPerSecond,
      seconds: matchIngest.seconds,
      stored: matchIngest.stored,
    };
    add(
      `matchmaking ingest (${matchIngest.stored / PLAYERS} events, ${matchIngest.stored} notifications)`,
      matchesPerSecond,
      "events/s",
    );
    add("matchmaking ingest: notifications/s", matchIngest.eventsPerSecond, "rows/s");
    add("matchmaking ÷ entitlement ingest (events/s)", matchesPerSecond / ingest.eventsPerSecond, "");
    // Measured: the next phases should not deliver this backlog (their settle waits for every open notification).
    await sql`delete from notification.notifications where type = 'MatchFound'`;

    const points = await measurePoints({ bin, nc, natsUrl, auth, tag, options, logDir: runDir, progress, detail });
    results.points = points.results;
    figures.push(...points.figures);
    progress(`expiry: ${options.expiries} entitlements (bundles of 100) expiring at one instant`);
    const expiry = await measureExpiryLateness({
      sql,
      url: entitlement.url,
      headers: auth.headers,
      count: options.expiries,
      leadMs: 5_000,
      prefix: `exp-${tag}`,
      timeoutMs: settleMs,
    });
    results.expiry = expiry;
    add(`expiry lateness p50 (${expiry.expired} due at once)`, expiry.p50Ms, "ms");
    add(`expiry lateness p99 (${expiry.expired} due at once)`, expiry.p99Ms, "ms", { op: "<=", value: 1000 });
    for (const s of running.splice(0).reverse()) await s.stop();
    const c = Math.max(...options.connections);
    const tracing = await measureTracingCost({
      start: async (env, label) => {
        const e = await stack.startService("entitlement", bin.entitlement, { ...entitlementEnv, ...env }, log(label));
        const n = await stack.startService(
          "notification",
          bin.notification,
          { ...notificationEnv(true), ...env },
          log(`${label}-n`),
        );
        return { entitlement: e, stop: async () => void (await Promise.all([e.stop(), n.stop()])) };
      },
      settle: () => settle(sql, settleMs),
      headers: auth.headers,
      connections: c,
      seconds: options.duration,
      rounds: options.quick ? 1 : 2,
      tag,
      progress,
    });
    results.tracing = tracing;
    for (const mode of ["off", "on"] as const) {
      const runs = tracing[mode];
      const p99 = mean(runs, (r) => r.p99Ms).toFixed(1);
      add(
        `grants/s API c=${c}, span export ${mode} (mean of ${runs.length}, p99 ${p99} ms)`,
        mean(runs, (r) => r.rps),
        "req/s",
      );
    }
    add("spans exported (tracing on)", tracing.spansReceived, "");
    for (const s of running.splice(0).reverse()) await s.stop();
    const replicas = await measureReplicas({
      adminUrl,
      bin,
      tag,
      auth,
      logDir: runDir,
      connections: options.connections[0] ?? 16,
      seconds: options.duration,
      rate: options.rate,
      rateSeconds: options.rateDuration,
      settleMs,
      settle,
      progress,
    });
    results.replicas = replicas;
    figures.push(...replicaRows(replicas, options.rate));
    pipeline = await measurePipelineCost({
      bin,
      options: {
        rate: options.rate,
        seconds: options.rateDuration,
        backlog: options.pipelineBacklog,
        idleSeconds: options.quick ? 1 : 10,
      },
      logDir: runDir,
      progress,
      detail,
    });
    results.pipeline = pipelineRows(pipeline).json;
    figures.push(...pipelineRows(pipeline).figures);
    const growth = await measureGrowth({ adminUrl, tag, options: growthOptions(options), progress });
    results.growth = growth.sizes;
    figures.push(...growth.figures);
    const players = await playersInChild(options, adminUrl, runDir);
    results.players = players.results;
    figures.push(...players.figures);
    // In decimal megabytes, as the size target is stated (10^6 bytes; MiB would read 4.6 % smaller).
    add("binary size: entitlement", stack.fileSize(bin.entitlement) / 1e6, "MB", { op: "<=", value: 110 });
    add("binary size: notification", stack.fileSize(bin.notification) / 1e6, "MB", { op: "<=", value: 110 });
  } finally {
    for (const s of running.reverse()) await s.stop().catch(() => {});
    await jwtIdp?.idp.close();
    const settings = await serverSettings(sql);
    results.machine = machine({ postgres: settings.server_version ?? "?", nats: nc.info?.version ?? "?" });
    const { cluster, deviations, port } = target;
    results.postgres = { cluster, deviations, settings, ...(port ? { port } : {}) };
    await sql.end({ timeout: 5 });
    if (!options.keep) {
      await stack.deleteStreams(nc, [
        names.stream,
        names.matches.stream,
        `${names.stream}-points`,
        ...names.advisories.map((a) => a.stream),
      ]);
      await stack.dropDatabase(adminUrl, names.database);
    }
    await nc.close();
  }
  const table = renderTable(figures);
  console.log(`\n${table}\n`);
  if (pipeline) console.log(`${renderPipelineTable(pipeline)}\n`);
  console.log(`${describeBenchPostgres(target)}\n`);
  const out = options.out ?? join(stack.root, ".data/bench", `${tag}.json`);
  const report = {
    tag,
    date: new Date().toISOString(),
    command: `bun run bench ${process.argv.slice(2).join(" ")}`.trim(),
    options,
    figures,
    results,
  };
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(stack.root, ".data/bench/latest.json"), `${JSON.stringify(report, null, 2)}\n`);
  progress(`done in ${((performance.now() - began) / 1000).toFixed(0)}s; JSON: ${relative(process.cwd(), out)}`);
}

/** What the figures depend on, as the server reports it (the JSON keeps it beside the deviations asked for). */
async function serverSettings(sql: postgres.Sql): Promise<Record<string, string>> {
  const names = ["server_version", "max_connections", "autovacuum", "fsync", "synchronous_commit", "shared_buffers"];
  const rows = await sql<{ name: string; setting: string }[]>`
    select name, current_setting(name) as setting from unnest(${names}::text[]) as name`.catch(() => []);
  return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
}

/** The bench's PostgreSQL: a cluster of its own, or DATABASE_URL's server with --use-database-url. */
function openTarget(options: BenchOptions): Promise<BenchPostgres> {
  return openBenchPostgres({
    useDatabaseUrl: options.useDatabaseUrl,
    databaseUrl: givenDatabaseUrl,
    connections: options.connections,
  });
}

/** A phase run alone (`--only`): its tag, its folder for logs and the executables it starts. */
async function prepareRun() {
  const tag = Date.now().toString(36);
  const runDir = join(stack.root, ".data/bench", tag);
  mkdirSync(runDir, { recursive: true });
  progress("building executables into .data/bench/dist");
  return { tag, runDir, bin: await stack.buildBinaries() };
}

/** The table of a phase run alone, and its JSON, as a full run writes them. */
function report(tag: string, options: BenchOptions, figures: Figure[], results: Record<string, unknown>): void {
  console.log(`\n${renderTable(figures)}\n`);
  const out = saveReport({ tag, options, figures, results, argv: process.argv.slice(2) });
  progress(`done in ${((performance.now() - began) / 1000).toFixed(0)}s; JSON: ${relative(process.cwd(), out)}`);
}

/** `--only api`: the first phase alone (api-alone.ts), to repeat the API ÷ pace ratio; the same table and JSON. */
async function mainApi(options: BenchOptions): Promise<void> {
  const { tag, runDir, bin } = await prepareRun();
  const target = await openTarget(options);
  try {
    progress(describeBenchPostgres(target));
    const alone = await measureApiAlone({
      adminUrl: target.adminUrl,
      binary: bin.entitlement,
      names: stack.benchNames(tag),
      auth: stack.apiAuth(),
      logFile: join(runDir, "entitlement-alone.log"),
      seconds: options.duration,
      tag,
      progress,
    });
    const results = { apiAlone: alone.result, machine: machine({ postgres: target.cluster, nats: "-" }) };
    report(tag, options, alone.figures, results);
  } finally {
    target.dispose(options.keep);
  }
}

/** `--only points`: the points phases alone, on their own cluster (points-phase.ts); the same table and JSON. */
async function mainPoints(options: BenchOptions): Promise<void> {
  const { tag, runDir, bin } = await prepareRun();
  const nc = await stack.connectBenchNats(natsUrl);
  try {
    const auth = stack.apiAuth();
    const points = await measurePoints({ bin, nc, natsUrl, auth, tag, options, logDir: runDir, progress, detail });
    const postgres = String((points.results.postgres as { version?: string } | undefined)?.version ?? "?");
    const results = { points: points.results, machine: machine({ postgres, nats: nc.info?.version ?? "?" }) };
    report(tag, options, points.figures, results);
  } finally {
    await nc.close();
  }
}

const growthOptions = (o: BenchOptions) => {
  const unknown = (o.growthRetention ?? []).filter((t) => !(DELETED_TABLES as readonly string[]).includes(t));
  if (unknown.length > 0) throw new Error(`--growth-retention takes ${DELETED_TABLES.join(", ")}; not ${unknown}`);
  const retentionOnly = o.growthRetention as DeletedTable[] | undefined;
  return { sizes: o.growthSizes, samples: o.growthSamples, explain: true, ...(retentionOnly ? { retentionOnly } : {}) };
};

/** `--only growth`: the growth phase alone (growth.ts) on the bench's PostgreSQL; the same table and JSON. */
async function mainGrowth(options: BenchOptions): Promise<void> {
  const tag = Date.now().toString(36);
  mkdirSync(join(stack.root, ".data/bench"), { recursive: true });
  const target = await openTarget(options);
  try {
    progress(describeBenchPostgres(target));
    const growth = await measureGrowth({ adminUrl: target.adminUrl, tag, options: growthOptions(options), progress });
    const admin = postgres(target.adminUrl, { max: 1, onnotice: () => {} });
    const settings = await serverSettings(admin);
    await admin.end();
    const results = { growth: growth.sizes, machine: machine({ postgres: settings.server_version ?? "?", nats: "-" }) };
    report(tag, options, growth.figures, results);
  } finally {
    target.dispose(options.keep);
  }
}

/**
 * The players' phase in a process of its own (it needs a fetch connection per stream, see mainPlayers), on this run's
 * PostgreSQL; a failure is reported as unmeasured figures, not as the end of the run.
 */
async function playersInChild(options: BenchOptions, adminUrl: string, runDir: string) {
  const out = join(runDir, "players.json");
  const sizes = ["--streams", options.streams, "--player-rate", options.playerRate];
  sizes.push("--player-seconds", options.playerSeconds, "--resume", options.resume);
  const child = Bun.spawn(
    [process.execPath, join(import.meta.dir, "run.ts"), "--only", "players", "--use-database-url", "--out", out].concat(
      sizes.map(String),
    ),
    { env: { ...process.env, DATABASE_URL: adminUrl }, stdio: ["inherit", "pipe", "inherit"] },
  );
  // The child's own table goes where progress goes: the run's stdout keeps one table, the main one, with every figure.
  const [code] = await Promise.all([
    child.exited,
    child.stdout.pipeTo(Writable.toWeb(process.stderr), { preventClose: true }),
  ]);
  if (code === 0) return JSON.parse(readFileSync(out, "utf8")) as { figures: Figure[]; results: unknown };
  const unmeasured = `the players' phase exited with ${code}`;
  return {
    figures: [{ name: "players: request → event p99", value: Number.NaN, unit: "ms", unmeasured }],
    results: {},
  };
}

/** `--only players`: the players' streams (players-phase.ts) on the bench's PostgreSQL; the same table and JSON. */
async function mainPlayers(options: BenchOptions): Promise<void> {
  // Each open stream holds one of fetch's connections, and Bun allows 256 at once unless told more at start: the
  // harness runs itself again with room for every stream.
  const room = options.streams + 256;
  if (Number(process.env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? 256) < room) {
    const again = Bun.spawn([process.execPath, ...process.argv.slice(1)], {
      env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: String(Math.min(65_336, room)) },
      stdio: ["inherit", "inherit", "inherit"],
    });
    process.exitCode = await again.exited;
    if (process.exitCode !== 0) throw new Error(`the players' phase exited with ${process.exitCode}`);
    return;
  }
  const { tag, runDir, bin } = await prepareRun();
  const target = await openTarget(options);
  const nc = await stack.connectBenchNats(natsUrl);
  try {
    progress(describeBenchPostgres(target));
    const args = { bin, nc, natsUrl, adminUrl: target.adminUrl, tag, options, logDir: runDir, progress };
    const players = await measurePlayers(args);
    const results = {
      ...players.results,
      machine: machine({ postgres: target.cluster, nats: nc.info?.version ?? "?" }),
    };
    report(tag, options, players.figures, results);
  } finally {
    await nc.close();
    target.dispose(options.keep);
  }
}

const options = parseBenchOptions(Bun.argv.slice(2));
const mains = { api: mainApi, points: mainPoints, growth: mainGrowth, players: mainPlayers };
(options.only ? mains[options.only](options) : main(options)).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);

/**
 * Where a phase's CPU went, per event: the machine's busy share, the named process (the relay's service, or the
 * harness that publishes), and everything else (PostgreSQL's backends, nats-server, the harness's polling). When the
 * machine is busy near 100 %, the phase is bound by the CPU those per-event costs add up to.
 */
function reportEventCpu(
  add: (name: string, value: number, unit: string) => void,
  phase: string,
  cpu: CpuReport,
  run: { published: number },
  process: string,
): void {
  const { own, rest } = cpuPerEvent(cpu, process, run.published);
  add(`machine CPU busy, ${phase}`, cpu.machineBusy * 100, "%");
  add(`CPU per event, ${phase}: ${process}`, own, "µs");
  add(`CPU per event, ${phase}: everything else`, rest, "µs");
}
