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
import { type ActivityProfile, measureClusterCpu, sampleActivity } from "./activity.ts";
import { measureCpu } from "./cpu.ts";
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

type Observed<T> = {
  value: T;
  machineBusy: number;
  /** CPU seconds of the services' processes and the harness. */
  processes: Record<string, number>;
  /** CPU seconds of the cluster's backends by whom they served (activity.ts). */
  cluster: Record<string, number>;
  activity: ActivityProfile;
};

/** Runs one phase with its CPU accounting and a sampling profile of the cluster. */
async function observe<T>(sql: postgres.Sql, pids: Record<string, number>, phase: () => Promise<T>) {
  const cpu = measureCpu(pids);
  const cluster = await measureClusterCpu(sql);
  const activity = sampleActivity(sql);
  const value = await phase();
  const { machineBusy, seconds } = cpu();
  const observed: Observed<T> = {
    value,
    machineBusy,
    processes: seconds,
    cluster: await cluster(),
    activity: await activity(),
  };
  return observed;
}

/** CPU milliseconds per executed reservation: the service, the cluster on its behalf, and the rest of the path. */
function cpuPerReservation(o: Observed<unknown>, executed: number) {
  const ms = (s: number) => Math.round((s * 1000 * 100) / Math.max(1, executed)) / 100;
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  const { entitlement = 0, notification = 0, ...background } = o.cluster;
  return {
    entitlement: ms(o.processes.entitlement ?? 0),
    postgresForEntitlement: ms(entitlement),
    notification: ms(o.processes.notification ?? 0),
    postgresForNotification: ms(notification),
    postgresOther: ms(sum(background)),
  };
}

/** Both services migrated and started on the cluster at `url`, with the phase's stream names; pushed onto `running`. */
async function startServices(p: PointsPhase, url: string, names: stack.Names, running: stack.Service[]): Promise<void> {
  const common = { DATABASE_URL: url, NATS_URL: p.natsUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
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
}

/** The backlog's and the lateness phase's figures, and the CPU per reservation of the backlog. */
function pointsFigures(
  drain: Observed<Awaited<ReturnType<typeof drainReservationBacklog>>>,
  late: Observed<Awaited<ReturnType<typeof measureLateness>>>,
  options: BenchOptions,
) {
  const drained = drain.value;
  const lateness = late.value;
  const figures: Figure[] = [];
  const add = (name: string, value: number, unit: string, target?: Figure["target"]) =>
    figures.push({ name, value, unit, ...(target ? { target } : {}) });
  const perReservation = cpuPerReservation(drain, drained.executed);
  add(`reservations executed/s (backlog of ${drained.executed})`, drained.perSecond, "res/s");
  add(
    `CPU per reservation, backlog (entitlement ${perReservation.entitlement} ms, PostgreSQL for it ` +
      `${perReservation.postgresForEntitlement} ms, notification ${perReservation.notification} + ` +
      `${perReservation.postgresForNotification} ms)`,
    Object.values(perReservation).reduce((a, b) => a + b, 0),
    "ms",
  );
  add("machine CPU busy, reservation backlog", drain.machineBusy * 100, "%");
  add(`reservation lateness p50 at ${options.dueRate}/s`, lateness.p50Ms, "ms");
  add(
    `reservation lateness p99 at ${options.dueRate}/s (${lateness.executed}/${lateness.count} executed)`,
    lateness.p99Ms,
    "ms",
    { op: "<=", value: 1000 },
  );
  add("reservation lateness max", lateness.maxMs, "ms");
  add("machine CPU busy, reservation lateness", late.machineBusy * 100, "%");
  return { figures, perReservation };
}

export async function measurePoints(p: PointsPhase): Promise<{ figures: Figure[]; results: Record<string, unknown> }> {
  const { options } = p;
  const folder = mkdtempSync(join(tmpdir(), "bench-points-"));
  chmodSync(folder, 0o755); // PostgreSQL runs as its own user and must reach its data folder inside.
  const names = stack.benchNames(`${p.tag}p`);
  const running: stack.Service[] = [];
  p.progress("points: starting a PostgreSQL cluster of their own (stock settings)");
  const pg = await startPostgres(folder, { stock: true });
  const sql = postgres(pg.url, { max: 2, onnotice: () => {} });
  try {
    await startServices(p, pg.url, names, running);
    const [settings] = await sql<{ version: string; fsync: string; autovacuum: string; sc: string }[]>`
      select current_setting('server_version') as version, current_setting('fsync') as fsync,
             current_setting('autovacuum') as autovacuum, current_setting('synchronous_commit') as sc`;
    const pids = Object.fromEntries(running.map((s) => [s.name, s.pid]));
    const args = { sql, timeoutMs: 600_000, progress: p.detail };

    p.progress(`points: a backlog of ${options.reservations} due reservations`);
    const drain = await observe(sql, pids, () =>
      drainReservationBacklog({ ...args, count: options.reservations, prefix: `pts-${p.tag}` }),
    );
    const drained = drain.value;
    p.progress(`points: ${options.dueRate} reservations due per second for ${options.dueDuration}s`);
    const late = await observe(sql, pids, () =>
      measureLateness({ ...args, rate: options.dueRate, seconds: options.dueDuration, prefix: `late-${p.tag}` }),
    );
    const lateness = late.value;
    const { figures, perReservation } = pointsFigures(drain, late, options);
    return {
      figures,
      results: {
        postgres: settings,
        drained,
        lateness,
        cpuPerReservation: { drain: perReservation, lateness: cpuPerReservation(late, lateness.executed) },
        observed: {
          drain: { ...drain, value: undefined },
          lateness: { ...late, value: undefined },
        },
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
