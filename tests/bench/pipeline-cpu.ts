// Where the CPU of the pipeline goes, process by process: the two services, the backends of the bench's own PostgreSQL
// cluster (told apart by the role each service connects as), its background processes, and nats-server; plus the
// statements each role ran (pg_stat_statements). The harness's own process and backend (the grant commits and the
// polling) are measured too, but are no part of the pipeline.
import type postgres from "postgres";
import { childrenCpu, processCpuSeconds, type TreeSnapshot, treeSnapshot } from "./cpu.ts";

/** Roles the bench connects as: each service as its own, so backends and statements can be told apart. */
export const ROLES = { entitlement: "bench_entitlement", notification: "bench_notification", harness: "bench_harness" };

export const PROCESSES = [
  "entitlement",
  "pg: entitlement",
  "notification",
  "pg: notification",
  "pg: background",
  "nats-server",
] as const;
export type ProcessName = (typeof PROCESSES)[number] | "harness" | "pg: harness";

export type Pids = { entitlement: number; notification: number; nats: number; postmaster: number };

type Snapshot = { pg: TreeSnapshot; who: Map<number, ProcessName>; own: Map<string, number> };

function roleProcess(usename: string | null): ProcessName {
  if (usename === ROLES.entitlement) return "pg: entitlement";
  if (usename === ROLES.notification) return "pg: notification";
  if (usename === ROLES.harness) return "pg: harness";
  return "pg: background";
}

async function snapshot(sql: postgres.Sql, pids: Pids): Promise<Snapshot> {
  const activity = await sql<{ pid: number; usename: string | null }[]>`select pid, usename from pg_stat_activity`;
  const who = new Map<number, ProcessName>(activity.map((a) => [a.pid, roleProcess(a.usename)]));
  const own = new Map<string, number>([
    ["entitlement", processCpuSeconds(pids.entitlement)],
    ["notification", processCpuSeconds(pids.notification)],
    ["nats-server", processCpuSeconds(pids.nats)],
    ["harness", processCpuSeconds(process.pid)],
  ]);
  return { pg: treeSnapshot(pids.postmaster), who, own };
}

export type Statement = { role: string; calls: number; query: string; ms: number };
export type CostWindow = { seconds: number; cpuSeconds: Record<ProcessName, number>; statements: Statement[] };

/**
 * Starts a window: resets pg_stat_statements and takes the first snapshot. The returned function closes it. A backend
 * that exits inside the window is counted through the postmaster's reaped-children time, as background (the pools'
 * connections live longer than a window, so that is rare).
 */
export async function openCostWindow(sql: postgres.Sql, pids: Pids): Promise<() => Promise<CostWindow>> {
  await sql`select pg_stat_statements_reset()`;
  const before = await snapshot(sql, pids);
  const started = performance.now();
  return async () => {
    const after = await snapshot(sql, pids);
    const seconds = (performance.now() - started) / 1000;
    const cpuSeconds = Object.fromEntries(
      [...PROCESSES, "harness", "pg: harness"].map((p) => [p, 0]),
    ) as CostWindow["cpuSeconds"];
    for (const [name, value] of after.own) cpuSeconds[name as ProcessName] += value - (before.own.get(name) ?? 0);
    const who = (pid: number) =>
      pid === pids.postmaster ? "pg: background" : (after.who.get(pid) ?? before.who.get(pid) ?? "pg: background");
    for (const [name, value] of childrenCpu(before.pg, after.pg, who, "pg: background"))
      cpuSeconds[name as ProcessName] += value;
    return { seconds, cpuSeconds, statements: await statements(sql) };
  };
}

async function statements(sql: postgres.Sql): Promise<Statement[]> {
  const rows = await sql<{ role: string; calls: number; query: string; ms: number }[]>`
    select r.rolname as role, s.calls::float8 as calls, s.total_exec_time as ms,
           regexp_replace(s.query, '\\s+', ' ', 'g') as query
    from pg_stat_statements s join pg_roles r on r.oid = s.userid
    where s.dbid = (select oid from pg_database where datname = current_database())
      and r.rolname in (${ROLES.entitlement}, ${ROLES.notification})
    order by s.calls desc`;
  return rows.map((r) => ({ ...r, calls: Number(r.calls) }));
}

/** Statements per event of one role (every statement it ran in the window, divided by the events). */
export function statementsPerEvent(window: CostWindow, role: string, events: number): number {
  return window.statements.filter((s) => s.role === role).reduce((a, s) => a + s.calls, 0) / events;
}

/** The core-milliseconds per event of each process of the pipeline, and their sum. */
export function coreMsPerEvent(window: CostWindow, events: number): Record<string, number> {
  const out: Record<string, number> = {};
  let total = 0;
  for (const p of PROCESSES) {
    out[p] = (window.cpuSeconds[p] * 1000) / events;
    total += out[p];
  }
  out.total = total;
  return out;
}
