// CPU accounting of a phase, to tell what bounds a figure on a 2-core machine: the machine's busy share and the CPU
// seconds of each process of interest (from /proc), the harness itself (autocannon runs in it) included.
import { readdirSync, readFileSync } from "node:fs";

export const TICKS_PER_SECOND = 100;

/** The fields of /proc/<pid>/stat after the command name: [0] state, [1] ppid, [11] utime … [14] cstime. */
function statFields(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ");
  } catch {
    return undefined;
  }
}

/** utime + stime of a process, in seconds (0 when it is gone). */
export function processCpuSeconds(pid: number): number {
  const fields = statFields(pid);
  return fields ? (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND : 0;
}

/** cutime + cstime: what the process's children that exited and were reaped spent, in seconds. */
export function reapedChildrenCpuSeconds(pid: number): number {
  const fields = statFields(pid);
  return fields ? (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND : 0;
}

/** The live children of a process (a scan of /proc). */
export function childPids(parent: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    if (statFields(Number(entry))?.[1] === String(parent)) pids.push(Number(entry));
  }
  return pids;
}

function machineTicks(): { busy: number; total: number } {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
  return { busy: total - idle, total };
}

export type CpuReport = { machineBusy: number; seconds: Record<string, number>; elapsedSeconds: number };

/** Starts measuring; the returned function gives the share of the machine that was busy and CPU seconds per name. */
export function measureCpu(pids: Record<string, number>): () => CpuReport {
  const machine = machineTicks();
  const started = performance.now();
  const all = { ...pids, harness: process.pid };
  const before = Object.fromEntries(Object.entries(all).map(([name, pid]) => [name, processCpuSeconds(pid)]));
  return () => {
    const m = machineTicks();
    const seconds: Record<string, number> = {};
    for (const [name, pid] of Object.entries(all)) seconds[name] = processCpuSeconds(pid) - (before[name] ?? 0);
    return {
      machineBusy: (m.busy - machine.busy) / Math.max(1, m.total - machine.total),
      seconds,
      elapsedSeconds: (performance.now() - started) / 1000,
    };
  };
}

/** CPU seconds the whole machine spent over the window: its busy share of every core. */
export const busySeconds = (r: CpuReport) => r.machineBusy * navigator.hardwareConcurrency * r.elapsedSeconds;

/** The cores a process kept busy over the measured window, e.g. "0.57". */
export const coresOf = (r: CpuReport, name: string) =>
  ((r.seconds[name] ?? 0) / Math.max(0.001, r.elapsedSeconds)).toFixed(2);

/**
 * A phase's CPU per event, in µs: the named process's, and everything else's (the machine's busy share over the
 * window, less that process: PostgreSQL's backends, nats-server, the harness). The window may be a little longer
 * than the phase (a last poll), so "everything else" is an upper bound.
 */
export function cpuPerEvent(r: CpuReport, name: string, events: number): { own: number; rest: number } {
  const busy = busySeconds(r);
  const own = r.seconds[name] ?? 0;
  const perEvent = (s: number) => (s / Math.max(1, events)) * 1e6;
  return { own: perEvent(own), rest: perEvent(busy - own) };
}

/** A process and its live children: CPU seconds of each, and what its children that ended have spent in all. */
export type TreeSnapshot = { cpu: Map<number, number>; reaped: number };

/** The CPU of `parent` and of each of its live children, now (childrenCpu compares two of these). */
export function treeSnapshot(parent: number): TreeSnapshot {
  const cpu = new Map<number, number>();
  for (const pid of [parent, ...childPids(parent)]) cpu.set(pid, processCpuSeconds(pid));
  return { cpu, reaped: reapedChildrenCpuSeconds(parent) };
}

/**
 * CPU seconds of a process tree between two snapshots, by the name `nameOf` gives each pid that is live at the end;
 * children that exited in between are summed under `exited`: their whole lifetime is in the parent's reaped time, so
 * the part they had spent before the window is taken off.
 */
export function childrenCpu(
  before: TreeSnapshot,
  after: TreeSnapshot,
  nameOf: (pid: number) => string,
  exited: string,
): Map<string, number> {
  const out = new Map<string, number>();
  const add = (name: string, seconds: number) => out.set(name, (out.get(name) ?? 0) + seconds);
  for (const [pid, seconds] of after.cpu) add(nameOf(pid), seconds - (before.cpu.get(pid) ?? 0));
  let reaped = after.reaped - before.reaped;
  for (const [pid, seconds] of before.cpu) if (!after.cpu.has(pid)) reaped -= seconds;
  add(exited, Math.max(0, reaped));
  return out;
}

/** What a PostgreSQL process is, from its title (`postgres: autovacuum worker`, `postgres: user db … idle`). */
function postgresKind(pid: number): "backends" | "autovacuum" | "background" {
  let title = "";
  try {
    title = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "background";
  }
  if (title.includes("autovacuum")) return "autovacuum";
  return /checkpointer|background writer|walwriter|wal writer|archiver|logical replication|stats/.test(title)
    ? "background"
    : "backends";
}

/**
 * Starts measuring a cluster's CPU by kind of process: client backends (the services' and the harness's queries),
 * autovacuum workers, background processes (checkpointer, WAL writer, the postmaster), and "exited": children that
 * ended in the window (an autovacuum worker does when its table is done).
 */
export function measurePostgresCpu(postmaster: number): () => Map<string, number> {
  const before = treeSnapshot(postmaster);
  return () =>
    childrenCpu(
      before,
      treeSnapshot(postmaster),
      (pid) => (pid === postmaster ? "background" : postgresKind(pid)),
      "exited",
    );
}
