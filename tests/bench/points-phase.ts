// The points phases (points.ts) on a PostgreSQL cluster of their own with stock settings (fsync and autovacuum on,
// initdb's defaults), started in a temporary folder for them and removed after: the shared test server runs with
// autovacuum off, and a scheduler's figures depend on the commit's WAL flush. Entitlement (scheduler and relay) and
// Notification run on it with stream names of their own on the run's NATS, so PointsGranted events are published and
// notified as in production while the scheduler is measured.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import postgres from "postgres";
import { startPostgres } from "../drills/cluster.ts";
import { sampleActivity } from "./activity.ts";
import { type CpuReport, measureCpu } from "./cpu.ts";
import type { BenchOptions } from "./options.ts";
import { drainReservationBacklog, measureLateness } from "./points.ts";
import type { Figure } from "./report.ts";
import * as stack from "./stack.ts";

export type PointsPhase = {
  bin: stack.Binaries;
  nc: NatsConnection;
  natsUrl: string;
  auth: stack.ApiAuth;
  tag: string;
  options: BenchOptions;
  logDir: string;
  progress: (line: string) => void;
  detail: (line: string) => void;
};

/** CPU cores used per process over a phase, the cluster's processes summed: "entitlement 0.61, postgres 0.80, …". */
function cores(r: CpuReport, seconds: number): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const [name, s] of Object.entries(r.seconds)) {
    const key = name.startsWith("postgres-") ? "postgres" : name;
    sums[key] = (sums[key] ?? 0) + s / seconds;
  }
  return Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, Math.round(v * 100) / 100]));
}

/** The postmaster listening on `port` and its children (backends, walwriter, checkpointer, autovacuum), from ps. */
function postgresPids(port: string): number[] {
  const rows = Bun.spawnSync(["ps", "-eo", "pid=,ppid=,args="])
    .stdout.toString()
    .split("\n")
    .map((line) => line.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
    .filter((m) => m !== null);
  const postmaster = rows.find((m) => /\bpostgres\b/.test(m[3] ?? "") && (m[3] ?? "").includes(`-p ${port} `));
  if (!postmaster) return [];
  const pid = Number(postmaster[1]);
  return [pid, ...rows.filter((m) => Number(m[2]) === pid).map((m) => Number(m[1]))];
}

export async function measurePoints(p: PointsPhase): Promise<{ figures: Figure[]; results: Record<string, unknown> }> {
  const { options } = p;
  const folder = mkdtempSync(join(tmpdir(), "bench-points-"));
  chmodSync(folder, 0o755); // PostgreSQL runs as its own user and must reach its data folder inside.
  const names = stack.benchNames(`${p.tag}p`);
  const running: stack.Service[] = [];
  const figures: Figure[] = [];
  const add = (name: string, value: number, unit: string, target?: Figure["target"]) =>
    figures.push({ name, value, unit, ...(target ? { target } : {}) });
  p.progress("points: starting a PostgreSQL cluster of their own (stock settings)");
  const pg = await startPostgres(folder, { stock: true });
  const sql = postgres(pg.url, { max: 2, onnotice: () => {} });
  try {
    const common = { DATABASE_URL: pg.url, NATS_URL: p.natsUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
    for (const service of ["entitlement", "notification"] as const) {
      const migrate = Bun.spawnSync([p.bin[service], "migrate"], { env: { ...process.env, ...common } });
      if (migrate.exitCode !== 0) throw new Error(`${service} migrate failed: ${migrate.stderr.toString()}`);
    }
    const log = (name: string) => join(p.logDir, `${name}.log`);
    const entitlementEnv = stack.entitlementEnv(names, common, p.auth);
    running.push(await stack.startService("entitlement", p.bin.entitlement, entitlementEnv, log("points-entitlement")));
    const notificationEnv = stack.notificationEnv(names, common, true);
    running.push(
      await stack.startService("notification", p.bin.notification, notificationEnv, log("points-notification")),
    );
    const [settings] = await sql<{ version: string; fsync: string; autovacuum: string; sc: string }[]>`
      select current_setting('server_version') as version, current_setting('fsync') as fsync,
             current_setting('autovacuum') as autovacuum, current_setting('synchronous_commit') as sc`;
    const port = new URL(pg.url).port;
    const pids = () => ({
      ...Object.fromEntries(running.map((s) => [s.name, s.pid])),
      ...Object.fromEntries(postgresPids(port).map((pid, i) => [`postgres-${i}`, pid])),
    });
    const args = { sql, timeoutMs: 600_000, progress: p.detail };

    p.progress(`points: a backlog of ${options.reservations} due reservations`);
    let cpu = measureCpu(pids());
    let activity = sampleActivity(sql);
    const drained = await drainReservationBacklog({ ...args, count: options.reservations, prefix: `pts-${p.tag}` });
    const drainCpu = cpu();
    const drainActivity = await activity();
    p.progress(`points: ${options.dueRate} reservations due per second for ${options.dueDuration}s`);
    cpu = measureCpu(pids());
    activity = sampleActivity(sql);
    const lateness = await measureLateness({
      ...args,
      rate: options.dueRate,
      seconds: options.dueDuration,
      prefix: `late-${p.tag}`,
    });
    const latenessCpu = cpu();
    const latenessActivity = await activity();
    add(`reservations executed/s (backlog of ${drained.executed})`, drained.perSecond, "res/s");
    add(`reservation lateness p50 at ${options.dueRate}/s`, lateness.p50Ms, "ms");
    add(
      `reservation lateness p99 at ${options.dueRate}/s (${lateness.executed}/${lateness.count} executed)`,
      lateness.p99Ms,
      "ms",
      { op: "<=", value: 1000 },
    );
    add("reservation lateness max", lateness.maxMs, "ms");
    add("machine CPU busy, reservation lateness", latenessCpu.machineBusy * 100, "%");
    return {
      figures,
      results: {
        postgres: settings,
        drained,
        lateness,
        cpu: { drain: drainCpu, lateness: latenessCpu },
        cores: { drain: cores(drainCpu, drained.seconds), lateness: cores(latenessCpu, options.dueDuration) },
        /** Average active backends per (service, wait, statement) while each phase ran. */
        activity: { drain: drainActivity, lateness: latenessActivity },
      },
    };
  } finally {
    for (const s of running.reverse()) await s.stop().catch(() => {});
    await sql.end({ timeout: 5 }).catch(() => {});
    pg.stop();
    rmSync(folder, { recursive: true, force: true });
    await stack.deleteStreams(p.nc, [names.stream, names.matches.stream, `${names.stream}-points`]);
    await stack.deleteStreams(
      p.nc,
      names.advisories.map((a) => a.stream),
    );
  }
}
