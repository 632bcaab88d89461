// The pipeline-cost phase: what one grant costs from its commit to its notification SENT, in core-milliseconds per
// process and statements per event, on the bench's own PostgreSQL cluster and nats-server (own-cluster.ts). CPU time,
// unlike wall-clock throughput, holds on a machine shared with other work. Three windows: idle (what the services
// spend with nothing to do, per second), a steady rate of single-grant commits, and a backlog committed at once; then
// the yardstick at the steady rate: pgbench of the least a grant writes, paced at that rate on the same cluster, the
// whole cluster's CPU and pgbench's own per transaction, which the pipeline's steady figure is read against.
import { chmodSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createPaceDatabase, runPace } from "./api-alone.ts";
import { childrenCpu, treeSnapshot } from "./cpu.ts";
import { removeOwnInfra, startOwnNats, startOwnPostgres } from "./own-cluster.ts";
import {
  type CostWindow,
  coreMsPerEvent,
  openCostWindow,
  type Pids,
  ROLES,
  statementsPerEvent,
} from "./pipeline-cpu.ts";
import { commitAtRate, commitBacklog, latencies, waitUntilSent } from "./pipeline-load.ts";
import * as stack from "./stack.ts";

/** The quiet before the idle window: longer than the workers' poll interval (1 s) twice over. */
const IDLE_SETTLE_MS = 3_000;

export type PipelineOptions = { rate: number; seconds: number; backlog: number; idleSeconds: number };

export type PipelineRun = {
  events: number;
  seconds: number;
  coreMs: Record<string, number>;
  statements: { entitlement: number; notification: number };
  window: CostWindow;
};

/** pgbench of the least a grant writes at the steady rate: core-ms per transaction of the cluster and of pgbench. */
export type Yardstick = { rate: number; transactions: number; cluster: number; client: number; total: number };

export type PipelineResult = {
  options: PipelineOptions;
  idleCoreMsPerSecond: Record<string, number>;
  steady: PipelineRun & { p50Ms: number; p99Ms: number };
  backlog: PipelineRun & { eventsPerSecond: number };
  yardstick: Yardstick;
};

const DATABASE = "bench_pipeline";

function summarizeRun(window: CostWindow, events: number): PipelineRun {
  return {
    events,
    seconds: window.seconds,
    coreMs: coreMsPerEvent(window, events),
    statements: {
      entitlement: statementsPerEvent(window, ROLES.entitlement, events),
      notification: statementsPerEvent(window, ROLES.notification, events),
    },
    window,
  };
}

/** Roles, the database and pg_stat_statements in the fresh cluster; returns the URL of each role. */
async function prepareDatabase(adminUrl: string): Promise<Record<keyof typeof ROLES, string>> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    for (const role of Object.values(ROLES)) await admin.unsafe(`create role ${role} login superuser`);
    await admin.unsafe(`create database ${DATABASE}`);
  } finally {
    await admin.end();
  }
  const url = (role: string) => {
    const u = new URL(stack.withDatabase(adminUrl, DATABASE));
    u.username = role;
    return u.toString();
  };
  const db = postgres(url(ROLES.harness), { max: 1, onnotice: () => {} });
  await db`create extension pg_stat_statements`;
  await db.end();
  return { entitlement: url(ROLES.entitlement), notification: url(ROLES.notification), harness: url(ROLES.harness) };
}

type PipelineArgs = {
  bin: stack.Binaries;
  options: PipelineOptions;
  logDir: string;
  progress: (line: string) => void;
  detail: (line: string) => void;
};

export async function measurePipelineCost(args: PipelineArgs): Promise<PipelineResult> {
  const dir = mkdtempSync(join(tmpdir(), "bench-pipeline-"));
  chmodSync(dir, 0o755);
  const stops: (() => Promise<void> | void)[] = [];
  try {
    const { sql, pids, adminUrl } = await startPipeline(args, dir, stops);
    const result = await measureWindows(sql, pids, args);
    args.progress(`pipeline cost: the yardstick, pgbench of the least a grant writes at ${args.options.rate}/s`);
    return { ...result, yardstick: await measureYardstick(adminUrl, pids.postmaster, args.options) };
  } finally {
    for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => {});
    removeOwnInfra(dir);
  }
}

/**
 * The cluster, nats-server, database and both services of the phase, migrated and started; each thing started pushes
 * its stop onto `stops`. Returns the harness's SQL handle and the processes whose CPU is measured.
 */
async function startPipeline(args: PipelineArgs, dir: string, stops: (() => Promise<void> | void)[]) {
  args.progress("pipeline cost: own PostgreSQL cluster (stock settings, pg_stat_statements) and nats-server");
  const pg = await startOwnPostgres();
  stops.push(pg.stop);
  const nats = await startOwnNats(dir);
  stops.push(nats.stop);
  const urls = await prepareDatabase(pg.url);
  const names = stack.benchNames(`pipe${Date.now().toString(36)}`);
  const common = (url: string) => ({ DATABASE_URL: url, NATS_URL: nats.url, LOG_LEVEL: "warn" });
  for (const service of ["entitlement", "notification"] as const) {
    const migrate = Bun.spawnSync([args.bin[service], "migrate"], {
      env: { ...process.env, ...common(urls[service]) },
    });
    if (migrate.exitCode !== 0) throw new Error(`${service} migrate failed: ${migrate.stderr.toString()}`);
  }
  const entitlementEnv = stack.entitlementEnv(names, common(urls.entitlement), stack.apiAuth());
  const log = (name: string) => join(args.logDir, `${name}.log`);
  const e = await stack.startService("entitlement", args.bin.entitlement, entitlementEnv, log("pipeline-entitlement"));
  stops.push(() => e.stop());
  const notificationEnv = stack.notificationEnv(names, common(urls.notification), true);
  const n = await stack.startService("notification", args.bin.notification, notificationEnv, log("pipeline-notif"));
  stops.push(() => n.stop());
  const sql = postgres(urls.harness, { max: 4, onnotice: () => {} });
  stops.push(() => sql.end({ timeout: 5 }));
  const pids: Pids = { entitlement: e.pid, notification: n.pid, nats: nats.pid, postmaster: pg.postmasterPid };
  return { sql, pids, adminUrl: pg.url };
}

/** The warm-up, then the three windows (idle, steady rate, backlog), each measured on `pids`. */
async function measureWindows(
  sql: postgres.Sql,
  pids: Pids,
  args: PipelineArgs,
): Promise<Omit<PipelineResult, "yardstick">> {
  const { options, progress } = args;
  const wait = (prefix: string, count: number) =>
    waitUntilSent(sql, { prefix, count, timeoutMs: 300_000, progress: args.detail });

  progress("pipeline cost: warm-up");
  await commitAtRate(sql, { prefix: "warm", rate: options.rate, seconds: 1 });
  await wait("warm", Math.round(options.rate));

  // Idle is what the services burn once the work is done: the first seconds after it (the relay's and the
  // scheduler's last polls before they go idle, a collection of the garbage of the warm-up) are not in the window.
  progress(`pipeline cost: idle, ${options.idleSeconds}s after ${IDLE_SETTLE_MS / 1000}s of quiet`);
  await Bun.sleep(IDLE_SETTLE_MS);
  let close = await openCostWindow(sql, pids);
  await Bun.sleep(options.idleSeconds * 1000);
  const idleWindow = await close();
  const idleCoreMsPerSecond = coreMsPerEvent(idleWindow, idleWindow.seconds);

  progress(`pipeline cost: ${options.rate} grants/s for ${options.seconds}s, commit → SENT`);
  close = await openCostWindow(sql, pids);
  const committed = await commitAtRate(sql, { prefix: "steady", ...options });
  const sent = await wait("steady", committed.size);
  const steadyWindow = await close();
  const e2e = latencies(committed, sent);

  progress(`pipeline cost: a backlog of ${options.backlog} committed at once, commit → SENT`);
  close = await openCostWindow(sql, pids);
  const at = await commitBacklog(sql, { prefix: "backlog", count: options.backlog });
  const backlogSent = await wait("backlog", options.backlog);
  const backlogWindow = await close();
  const last = Math.max(...backlogSent.values());
  return {
    options,
    idleCoreMsPerSecond,
    steady: { ...summarizeRun(steadyWindow, committed.size), p50Ms: e2e.p50, p99Ms: e2e.p99 },
    backlog: {
      ...summarizeRun(backlogWindow, options.backlog),
      eventsPerSecond: options.backlog / ((last - at) / 1000),
    },
  };
}

/**
 * The database's pace for a grant at the steady window's rate instead of as fast as it goes: pgbench (simple mode, as
 * the yardstick is defined, four clients paced together at `rate`) of pace-grant.pgbench.sql on a database of plain
 * tables in the same cluster, for the steady window's length. Counted: every process of the cluster (the services are
 * idle meanwhile and their backends nearly so) and pgbench's own CPU, per transaction it finished.
 */
async function measureYardstick(adminUrl: string, postmaster: number, options: PipelineOptions): Promise<Yardstick> {
  const url = await createPaceDatabase(adminUrl, "bench_pipeline_pace");
  const before = treeSnapshot(postmaster);
  const run = await runPace(url, 4, options.seconds, options.rate);
  const after = treeSnapshot(postmaster);
  if (run.unmeasured) throw new Error(`the yardstick at ${options.rate}/s measured nothing: ${run.unmeasured}`);
  const cluster = childrenCpu(before, after, () => "cluster", "cluster").get("cluster") ?? 0;
  const perTx = (seconds: number) => (seconds * 1000) / run.ok;
  return {
    rate: options.rate,
    transactions: run.ok,
    cluster: perTx(cluster),
    client: perTx(run.clientCpuSeconds),
    total: perTx(cluster + run.clientCpuSeconds),
  };
}
