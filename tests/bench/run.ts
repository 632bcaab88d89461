// `bun run bench`: builds both executables, starts them on a fresh database of a PostgreSQL cluster of its own (stock
// settings, bench-postgres.ts; DATABASE_URL's server with --use-database-url) and fresh stream names on the local NATS,
// runs every phase (docs/benchmarks.md), prints one table and writes the figures as JSON.
//   bun run bench [--quick] [...]   (see options.ts; NATS_URL as for the tests)
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { Writable } from "node:stream";
import type { NatsConnection } from "@nats-io/transport-node";
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
import { measurePush, type PushOptions } from "./push.ts";
import { READ_USERS, runReadLoad, seedReadSet } from "./reads.ts";
import { rawPublish, seedAndDrainOutbox } from "./relay.ts";
import { measureReplicas, replicaRows } from "./replicas.ts";
import { type Figure, machine, renderTable, saveReport } from "./report.ts";
import { measureSend } from "./send.ts";
import * as stack from "./stack.ts";
import { progressLines, summarize } from "./stats.ts";
import { mean, measureTracingCost } from "./tracing.ts";

const givenDatabaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const DUPLICATE_WINDOW_MS = 120_000;

const { began, progress, detail } = progressLines();

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

/** What every phase of a full run shares: where it runs, what it started, and what it has found so far. */
type Run = {
  options: BenchOptions;
  target: BenchPostgres;
  tag: string;
  names: stack.Names;
  runDir: string;
  bin: stack.Binaries;
  databaseUrl: string;
  sql: postgres.Sql;
  nc: NatsConnection;
  auth: stack.ApiAuth;
  common: Record<string, string>;
  /** Entitlement also accepts the tokens of an OpenID provider in the harness, for the JWT auth phase. */
  jwtIdp: Awaited<ReturnType<typeof startBenchIdp>> | undefined;
  entitlementEnv: Record<string, string>;
  notificationEnv: (delivery: boolean) => Record<string, string>;
  /** The services running now, stopped in reverse however the run ends. */
  running: stack.Service[];
  figures: Figure[];
  results: Record<string, unknown>;
  pipeline?: PipelineResult;
  add: (name: string, value: number, unit: string, target?: Figure["target"], unmeasured?: string) => void;
  settleMs: number;
  settle: () => Promise<boolean>;
  log: (name: string) => string;
};

/** The services the shared phases load: Notification is restarted between them (delivery on or off). */
type Services = { entitlement: stack.Service; notification: stack.Service };

async function runPhases(options: BenchOptions, target: BenchPostgres): Promise<void> {
  const run = await openRun(options, target);
  try {
    migrate(run);
    // First, while nothing else runs: the API alone against the database's pace (api-alone.ts).
    const alone = await measureApiAlone({
      adminUrl: target.adminUrl,
      binary: run.bin.entitlement,
      names: run.names,
      auth: run.auth,
      logFile: join(run.runDir, "entitlement-alone.log"),
      seconds: options.duration,
      tag: run.tag,
      progress,
    });
    run.results.apiAlone = alone.result;
    run.figures.push(...alone.figures);
    await measureReady(run);
    const services = await startServices(run);
    const peakRss = stack.sampleRss([services.entitlement, services.notification]);
    await measureThroughput(run, services, alone.result.pace);
    await measureJwt(run, services.entitlement);
    await measureReads(run, services.entitlement, peakRss);
    await measureLatency(run, services.entitlement);
    await measureRelay(run, services);
    const ingest = await measureNotificationIngest(run, services);
    await measureMatchIngest(run, services, ingest.eventsPerSecond);
    const { bin, nc, auth, tag, runDir: logDir } = run;
    const points = await measurePoints({ bin, nc, natsUrl, auth, tag, options, logDir, progress, detail });
    run.results.points = points.results;
    run.figures.push(...points.figures);
    await measureExpiry(run, services.entitlement);
    for (const s of run.running.splice(0).reverse()) await s.stop();
    await measureTracing(run);
    for (const s of run.running.splice(0).reverse()) await s.stop();
    await measureOnClustersOfTheirOwn(run);
    const push = await measurePush({ ...pushPhase(options), bin: run.bin, tag: run.tag, logDir: run.runDir });
    run.results.push = push.results;
    run.figures.push(...push.figures);
    // In decimal megabytes, as the size target is stated (10^6 bytes; MiB would read 4.6 % smaller).
    run.add("binary size: entitlement", stack.fileSize(run.bin.entitlement) / 1e6, "MB", { op: "<=", value: 110 });
    run.add("binary size: notification", stack.fileSize(run.bin.notification) / 1e6, "MB", { op: "<=", value: 110 });
  } finally {
    await closeRun(run);
  }
  writeRunReport(run);
}

/** The run's tag, folder, executables, database, NATS connection, credentials and services' variables. */
async function openRun(options: BenchOptions, target: BenchPostgres): Promise<Run> {
  const tag = Date.now().toString(36);
  const names = stack.benchNames(tag);
  const runDir = join(stack.root, ".data/bench", tag);
  mkdirSync(runDir, { recursive: true });
  progress(`building executables into .data/bench/dist`);
  const bin = await stack.buildBinaries();
  progress(`creating database ${names.database}, stream ${names.stream}`);
  const databaseUrl = await stack.createDatabase(target.adminUrl, names.database);
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
  const nc = await stack.connectBenchNats(natsUrl);
  const auth = stack.apiAuth();
  const common = { DATABASE_URL: databaseUrl, NATS_URL: natsUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
  const jwtIdp = auth.mode === "bearer token" && jwtAuthSupported() ? await startBenchIdp() : undefined;
  const figures: Figure[] = [];
  const settleMs = options.settleTimeout * 1000;
  return {
    options,
    target,
    tag,
    names,
    runDir,
    bin,
    databaseUrl,
    sql,
    nc,
    auth,
    common,
    jwtIdp,
    figures,
    settleMs,
    entitlementEnv: { ...stack.entitlementEnv(names, common, auth), ...jwtIdp?.env },
    notificationEnv: (delivery) => stack.notificationEnv(names, common, delivery),
    running: [],
    results: { auth: auth.mode },
    add: (name, value, unit, target, unmeasured) =>
      figures.push({ name, value, unit, ...(target ? { target } : {}), ...(unmeasured ? { unmeasured } : {}) }),
    settle: () => settle(sql, settleMs),
    log: (name) => join(runDir, `${name}.log`),
  };
}

function migrate(run: Run): void {
  for (const service of ["entitlement", "notification"] as const) {
    const migrated = Bun.spawnSync([run.bin[service], "migrate"], { env: { ...process.env, ...run.common } });
    if (migrated.exitCode !== 0) throw new Error(`${service} migrate failed: ${migrated.stderr.toString()}`);
  }
}

/** Footprint: exec → /readyz 200, alternating starts of each service on the migrated database. */
async function measureReady(run: Run): Promise<void> {
  const { bin, log } = run;
  const starts = run.options.quick ? 3 : 7;
  progress(`footprint: exec → /readyz 200, ${starts} alternating starts of each service on the migrated database`);
  const ready = await stack.readyTimes(
    {
      entitlement: (n) => stack.startService("entitlement", bin.entitlement, run.entitlementEnv, log(`ready-e${n}`)),
      notification: (n) =>
        stack.startService("notification", bin.notification, run.notificationEnv(true), log(`ready-n${n}`)),
    },
    starts,
  );
  run.results.ready = ready;
  for (const [name, times] of Object.entries(ready)) {
    const s = summarize(times);
    run.add(
      `ready: ${name} (median of ${s.n} starts, ${Math.min(...times).toFixed(0)}–${s.max.toFixed(0)})`,
      s.p50,
      "ms",
      {
        op: "<=",
        value: 200,
      },
    );
  }
}

/** Both services, for the shared phases, and their memory once idle. */
async function startServices(run: Run): Promise<Services> {
  const { bin, log } = run;
  const entitlement = await stack.startService("entitlement", bin.entitlement, run.entitlementEnv, log("entitlement"));
  run.running.push(entitlement);
  const notification = await stack.startService(
    "notification",
    bin.notification,
    run.notificationEnv(true),
    log("notification"),
  );
  run.running.push(notification);
  await Bun.sleep(run.options.quick ? 500 : 3_000);
  run.add("RSS idle: entitlement", entitlement.rssMb(), "MiB", { op: "<=", value: 80 });
  run.add("RSS idle: notification", notification.rssMb(), "MiB", { op: "<=", value: 80 });
  return { entitlement, notification };
}

/** Grants/s through the API and by pgbench of the same write set, at each concurrency, with the machine's CPU. */
async function measureThroughput(run: Run, services: Services, pace: ThroughputResult & { unmeasured?: string }) {
  const { options, tag, auth } = run;
  const throughput: Record<string, ThroughputResult & { cpu: CpuReport }> = {};
  progress(`grant throughput: warm-up`);
  await runGrantLoad({ url: services.entitlement.url, headers: auth.headers, connections: 16, seconds: 1, tag });
  for (const c of options.connections) {
    await run.settle();
    progress(`grant throughput: API, ${c} connections, ${options.duration}s (autocannon)`);
    const pids = { entitlement: services.entitlement.pid, notification: services.notification.pid };
    let cpu = measureCpu(pids);
    const api = {
      ...(await runGrantLoad({
        url: services.entitlement.url,
        headers: auth.headers,
        connections: c,
        seconds: options.duration,
        tag,
      })),
      cpu: cpu(),
    };
    await run.settle();
    progress(`grant throughput: pgbench, ${c} clients, ${options.duration}s (same write set)`);
    cpu = measureCpu(pids);
    const pg = {
      ...(await runPgbench({ databaseUrl: run.databaseUrl, clients: c, seconds: options.duration })),
      cpu: cpu(),
    };
    throughput[`api_c${c}`] = api;
    throughput[`pgbench_c${c}`] = pg;
    addThroughputFigures(run, c, api, pg, pace);
  }
  run.results.throughput = throughput;
  await run.settle();
}

/** The figures of one concurrency: the API's and pgbench's grants/s, their ratio, and the machine's CPU busy. */
function addThroughputFigures(
  { add }: Run,
  c: number,
  api: ThroughputResult & { cpu: CpuReport },
  pg: ThroughputResult & { cpu: CpuReport; unmeasured?: string },
  pace: ThroughputResult & { unmeasured?: string },
): void {
  add(`grants/s API c=${c} (p50 ${api.p50Ms} ms, p99 ${api.p99Ms} ms, non-2xx ${api.non2xx})`, api.rps, "req/s");
  if (pg.unmeasured) {
    progress(`grant throughput: pgbench, ${c} clients, measured nothing: ${pg.unmeasured}`);
    add(`grants/s pgbench c=${c}`, Number.NaN, "tx/s", undefined, pg.unmeasured);
    add(`API ÷ pgbench c=${c}`, Number.NaN, "", { op: ">=", value: 0.8 }, pg.unmeasured);
  } else {
    add(`grants/s pgbench c=${c} (p50 ${pg.p50Ms.toFixed(1)} ms, p99 ${pg.p99Ms.toFixed(1)} ms)`, pg.rps, "tx/s");
    add(`API ÷ pgbench c=${c}`, api.rps / pg.rps, "", { op: ">=", value: 0.8 });
  }
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

/** With a provider in the harness: grants/s with its tokens against a static token, alternating. */
async function measureJwt(run: Run, entitlement: stack.Service): Promise<void> {
  const { options, jwtIdp } = run;
  if (!jwtIdp) return;
  const c = options.connections[0] ?? 16;
  progress(`JWT auth: grants/s with a provider's token and with a static token, ${c} connections, alternating`);
  const jwt = await measureJwtAuth({
    idp: jwtIdp.idp,
    url: entitlement.url,
    staticHeaders: run.auth.headers,
    connections: c,
    seconds: options.duration,
    rounds: options.quick ? 1 : 2,
    tag: run.tag,
    settle: run.settle,
  });
  run.results.jwtAuth = jwt;
  const detailOf = `JWT ${jwt.jwt.toFixed(0)}, static ${jwt.static.toFixed(0)} grants/s, mean of ${jwt.rounds}, non-2xx ${jwt.non2xx}`;
  run.add(`grants/s JWT ÷ static token c=${c} (${detailOf})`, jwt.ratio, "", { op: ">=", value: 0.9 });
  await run.settle();
}

/** Reads/s of the check and the list over a seeded set of users; then the services' peak memory under load. */
async function measureReads(run: Run, entitlement: stack.Service, peakRss: () => Record<string, number>) {
  const { options } = run;
  const readPrefix = `read-${run.tag}`;
  await seedReadSet(run.sql, readPrefix);
  const reads: Record<string, ThroughputResult> = {};
  for (const kind of ["check", "list"] as const) {
    progress(`reads: ${kind}, 64 connections, ${options.duration}s over ${READ_USERS} users (autocannon)`);
    const r = await runReadLoad({
      url: entitlement.url,
      headers: run.auth.headers,
      connections: 64,
      seconds: options.duration,
      prefix: readPrefix,
      kind,
    });
    reads[kind] = r;
    run.add(`reads/s ${kind} c=64 (p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, non-2xx ${r.non2xx})`, r.rps, "req/s");
  }
  run.results.reads = reads;
  const loadRss = peakRss();
  run.add("RSS under load: entitlement", loadRss.entitlement ?? 0, "MiB");
  run.add("RSS under load: notification", loadRss.notification ?? 0, "MiB");
}

/** Commit → SENT through the API at the everyday rate (p50 and p99 targets), then at a peak rate (p99 target). */
async function measureLatency(run: Run, entitlement: stack.Service): Promise<void> {
  const { options, add } = run;
  const e2eRuns = [
    { rate: options.rate, p50: 10, p99: 30 },
    { rate: options.peakRate, p50: undefined, p99: 60 },
  ];
  const e2eResults: Record<string, unknown> = {};
  for (const [i, step] of e2eRuns.entries()) {
    progress(`end-to-end: ${step.rate} grants/s for ${options.rateDuration}s`);
    const e2e = await measureEndToEnd({
      sql: run.sql,
      url: entitlement.url,
      headers: run.auth.headers,
      rate: step.rate,
      seconds: options.rateDuration,
      prefix: `e2e${i}-${run.tag}`,
      timeoutMs: run.settleMs,
    });
    e2eResults[`at_${step.rate}`] = e2e;
    const p50Target = step.p50 === undefined ? undefined : { op: "<=" as const, value: step.p50 };
    add(`end-to-end p50 at ${step.rate}/s`, e2e.p50Ms, "ms", p50Target);
    add(`end-to-end p95 at ${step.rate}/s`, e2e.p95Ms, "ms");
    add(`end-to-end p99 at ${step.rate}/s (${e2e.delivered}/${e2e.sent} delivered)`, e2e.p99Ms, "ms", {
      op: "<=",
      value: step.p99,
    });
    await run.settle();
  }
  run.results.e2e = e2eResults;
}

/** With Notification stopped: a backlog of outbox rows drained by the relay, against a raw publish of as many. */
async function measureRelay(run: Run, services: Services): Promise<void> {
  const { options, add, tag, nc } = run;
  progress(`relay drain: stopping notification, inserting ${options.events} PENDING outbox rows`);
  await stopNotification(run, services);
  let cpu = measureCpu({});
  let postgresCpu: ReturnType<typeof measurePostgresCpu> | undefined;
  const drain = await seedAndDrainOutbox({
    sql: run.sql,
    count: options.events,
    prefix: `drain-${tag}`,
    timeoutMs: 600_000,
    stream: { nc, name: run.names.stream },
    progress: detail,
    onCommitted: () => {
      cpu = measureCpu({ entitlement: services.entitlement.pid });
      if (run.target.postmasterPid) postgresCpu = measurePostgresCpu(run.target.postmasterPid);
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
  run.results.relay = { drain, raw };
  add(`relay drain (${drain.published} events)`, drain.eventsPerSecond, "events/s");
  add(`raw publish (window ${options.publishWindow})`, raw.eventsPerSecond, "events/s");
  add("relay ÷ raw publish", drain.eventsPerSecond / raw.eventsPerSecond, "", { op: ">=", value: 0.6 });
  reportEventCpu(add, "relay drain", drainCpu, drain, "entitlement");
  // What "everything else" was made of, on the bench's own cluster: the relay's and the harness's queries, autovacuum
  // (the phases before leave it work on the same tables), the cluster's background processes.
  for (const [kind, seconds] of drainPostgres ?? [])
    add(`CPU per event, relay drain: PostgreSQL ${kind}`, (seconds / Math.max(1, drain.published)) * 1e6, "µs");
  reportEventCpu(add, "raw publish", cpu(), { ...raw, published: options.events }, "harness");
}

async function stopNotification(run: Run, services: Services): Promise<void> {
  await services.notification.stop();
  run.running.splice(run.running.indexOf(services.notification), 1);
}

/** A start of Notification (delivery off) for an ingest phase, which becomes the running one. */
function restartNotification(run: Run, services: Services, label: string) {
  return async () => {
    const notification = await stack.startService(
      "notification",
      run.bin.notification,
      run.notificationEnv(false),
      run.log(label),
    );
    services.notification = notification;
    run.running.push(notification);
    return notification;
  };
}

/** A backlog of entitlement events in the stream, stored by a Notification started after it (delivery off). */
async function measureNotificationIngest(run: Run, services: Services) {
  const { options, names } = run;
  progress(`notification ingest: backlog of ${options.events} events, starting notification (delivery off)`);
  await fillBacklog(run.nc, {
    stream: names.stream,
    durable: names.durable,
    subject: names.subject,
    count: options.events,
    window: options.publishWindow,
  });
  const rssDuringIngest = { peak: 0 };
  const ingest = await measureIngest({
    sql: run.sql,
    count: options.events,
    timeoutMs: 600_000,
    progress: (line) => {
      rssDuringIngest.peak = Math.max(rssDuringIngest.peak, services.notification.rssMb());
      detail(line);
    },
    start: restartNotification(run, services, "notification-ingest"),
  });
  run.results.ingest = { eventsPerSecond: ingest.eventsPerSecond, seconds: ingest.seconds, stored: ingest.stored };
  run.add(`ingest (${ingest.stored} events)`, ingest.eventsPerSecond, "events/s", { op: ">=", value: 5000 });
  run.add("RSS during ingest: notification", Math.max(rssDuringIngest.peak, services.notification.rssMb()), "MiB");
  return ingest;
}

/** A backlog of matches (a notification per player each), stored by a restarted Notification; then removed. */
async function measureMatchIngest(run: Run, services: Services, ingestEventsPerSecond: number): Promise<void> {
  const { options, add } = run;
  progress(`matchmaking ingest: backlog of ${options.events} matches of ${PLAYERS} players, starting notification`);
  await stopNotification(run, services);
  await publishMatches(run.nc, {
    subject: run.names.matches.subject,
    count: options.events,
    window: options.publishWindow,
    prefix: `match-${run.tag}`,
  });
  const matchIngest = await measureIngest({
    sql: run.sql,
    count: options.events * PLAYERS,
    type: "MatchFound",
    timeoutMs: 600_000,
    progress: detail,
    start: restartNotification(run, services, "notification-match-ingest"),
  });
  const matchesPerSecond = matchIngest.stored / PLAYERS / matchIngest.seconds;
  run.results.matchIngest = {
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
  add("matchmaking ÷ entitlement ingest (events/s)", matchesPerSecond / ingestEventsPerSecond, "");
  // Measured: the next phases should not deliver this backlog (their settle waits for every open notification).
  await run.sql`delete from notification.notifications where type = 'MatchFound'`;
}

/** Entitlements in bundles of 100, all expiring at one instant: how late the scheduler expires them. */
async function measureExpiry(run: Run, entitlement: stack.Service): Promise<void> {
  const { options } = run;
  progress(`expiry: ${options.expiries} entitlements (bundles of 100) expiring at one instant`);
  const expiry = await measureExpiryLateness({
    sql: run.sql,
    url: entitlement.url,
    headers: run.auth.headers,
    count: options.expiries,
    leadMs: 5_000,
    prefix: `exp-${run.tag}`,
    timeoutMs: run.settleMs,
  });
  run.results.expiry = expiry;
  run.add(`expiry lateness p50 (${expiry.expired} due at once)`, expiry.p50Ms, "ms");
  run.add(`expiry lateness p99 (${expiry.expired} due at once)`, expiry.p99Ms, "ms", { op: "<=", value: 1000 });
}

/** Grants/s with span export off and on, each on services of its own. */
async function measureTracing(run: Run): Promise<void> {
  const { options, bin, log } = run;
  const c = Math.max(...options.connections);
  const tracing = await measureTracingCost({
    start: async (env, label) => {
      const e = await stack.startService("entitlement", bin.entitlement, { ...run.entitlementEnv, ...env }, log(label));
      const n = await stack.startService(
        "notification",
        bin.notification,
        { ...run.notificationEnv(true), ...env },
        log(`${label}-n`),
      );
      return { entitlement: e, stop: async () => void (await Promise.all([e.stop(), n.stop()])) };
    },
    settle: run.settle,
    headers: run.auth.headers,
    connections: c,
    seconds: options.duration,
    rounds: options.quick ? 1 : 2,
    tag: run.tag,
    progress,
  });
  run.results.tracing = tracing;
  for (const mode of ["off", "on"] as const) {
    const runs = tracing[mode];
    const p99 = mean(runs, (r) => r.p99Ms).toFixed(1);
    run.add(
      `grants/s API c=${c}, span export ${mode} (mean of ${runs.length}, p99 ${p99} ms)`,
      mean(runs, (r) => r.rps),
      "req/s",
    );
  }
  run.add("spans exported (tracing on)", tracing.spansReceived, "");
}

/**
 * The phases that start what they measure themselves: replicas, the pipeline's cost, growth, the players and the send
 * API.
 */
async function measureOnClustersOfTheirOwn(run: Run): Promise<void> {
  const { options, results, figures } = run;
  const { adminUrl } = run.target;
  const replicas = await measureReplicas({
    adminUrl,
    bin: run.bin,
    tag: run.tag,
    auth: run.auth,
    logDir: run.runDir,
    connections: options.connections[0] ?? 16,
    seconds: options.duration,
    rate: options.rate,
    rateSeconds: options.rateDuration,
    settleMs: run.settleMs,
    settle,
    progress,
  });
  results.replicas = replicas;
  figures.push(...replicaRows(replicas, options.rate));
  const pipelineOptions = {
    rate: options.rate,
    seconds: options.rateDuration,
    backlog: options.pipelineBacklog,
    idleSeconds: options.quick ? 1 : 10,
  };
  run.pipeline = await measurePipelineCost({
    bin: run.bin,
    options: pipelineOptions,
    logDir: run.runDir,
    progress,
    detail,
  });
  results.pipeline = pipelineRows(run.pipeline).json;
  figures.push(...pipelineRows(run.pipeline).figures);
  const growth = await measureGrowth({ adminUrl, tag: run.tag, options: growthOptions(options), progress });
  results.growth = growth.sizes;
  figures.push(...growth.figures);
  const players = await playersInChild(options, adminUrl, run.runDir);
  results.players = players.results;
  figures.push(...players.figures);
  const { sendStreams: streams, sends } = options;
  const send = await measureSend({
    bin: run.bin,
    adminUrl,
    tag: run.tag,
    streams,
    sends,
    logDir: run.runDir,
    progress,
  });
  results.send = send.results;
  figures.push(...send.figures);
}

/** Stops what still runs, records the machine and the server's settings, and removes the run's database and streams. */
async function closeRun(run: Run): Promise<void> {
  const { sql, nc, names, target } = run;
  for (const s of run.running.reverse()) await s.stop().catch(() => {});
  await run.jwtIdp?.idp.close();
  const settings = await serverSettings(sql);
  run.results.machine = machine({ postgres: settings.server_version ?? "?", nats: nc.info?.version ?? "?" });
  const { cluster, deviations, port } = target;
  run.results.postgres = { cluster, deviations, settings, ...(port ? { port } : {}) };
  await sql.end({ timeout: 5 });
  if (!run.options.keep) {
    await stack.deleteStreams(nc, [
      names.stream,
      names.matches.stream,
      `${names.stream}-points`,
      ...names.advisories.map((a) => a.stream),
    ]);
    await stack.dropDatabase(target.adminUrl, names.database);
  }
  await nc.close();
}

/** The table, the pipeline's table and the cluster's description printed; the JSON written, and as latest.json. */
function writeRunReport(run: Run): void {
  const { options, tag, figures, results } = run;
  const table = renderTable(figures);
  console.log(`\n${table}\n`);
  if (run.pipeline) console.log(`${renderPipelineTable(run.pipeline)}\n`);
  console.log(`${describeBenchPostgres(run.target)}\n`);
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
 * The players' phase in a process of its own (it needs more fetch connections than Bun's default, see mainPlayers), on this run's
 * PostgreSQL; a failure is reported as unmeasured figures, not as the end of the run.
 */
async function playersInChild(options: BenchOptions, adminUrl: string, runDir: string) {
  const out = join(runDir, "players.json");
  const sizes = [
    "--streams",
    options.streams,
    "--idle-seconds",
    options.idleSeconds,
    "--player-rate",
    options.playerRate,
  ];
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
  // The streams are read by processes of their own (stream-readers.ts); the harness holds a fetch connection per grant
  // in flight, and Bun allows 256 at once unless told more at start: it runs itself again with room for a backlog.
  const room = 4_096;
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

const pushPhase = (o: BenchOptions): { options: PushOptions; progress: typeof progress } => ({
  options: { devices: o.pushDevices, rounds: o.pushRounds, mode: o.pushMode },
  progress,
});

/** `--only push`: the push phase alone (push.ts), on a PostgreSQL cluster of its own; the same table and JSON. */
async function mainPush(options: BenchOptions): Promise<void> {
  const { tag, runDir, bin } = await prepareRun();
  const push = await measurePush({ ...pushPhase(options), bin, tag, logDir: runDir });
  report(tag, options, push.figures, { push: push.results, machine: machine({ postgres: "own cluster", nats: "-" }) });
}

const options = parseBenchOptions(Bun.argv.slice(2));
const mains = { api: mainApi, points: mainPoints, growth: mainGrowth, players: mainPlayers, push: mainPush };
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
