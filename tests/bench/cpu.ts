// CPU accounting of a phase, to tell what bounds a figure on a 2-core machine: the machine's busy share and the CPU
// seconds of each process of interest (from /proc), the harness itself (autocannon runs in it) included.
import { readFileSync } from "node:fs";

export const TICKS_PER_SECOND = 100;

/** utime + stime of a process, in seconds (0 when it is gone). */
export function processCpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

function machineTicks(): { busy: number; total: number } {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
  return { busy: total - idle, total };
}

export type CpuReport = { machineBusy: number; seconds: Record<string, number> };

/** Starts measuring; the returned function gives the share of the machine that was busy and CPU seconds per name. */
export function measureCpu(pids: Record<string, number>): () => CpuReport {
  const machine = machineTicks();
  const all = { ...pids, harness: process.pid };
  const before = Object.fromEntries(Object.entries(all).map(([name, pid]) => [name, processCpuSeconds(pid)]));
  return () => {
    const m = machineTicks();
    const seconds: Record<string, number> = {};
    for (const [name, pid] of Object.entries(all)) seconds[name] = processCpuSeconds(pid) - (before[name] ?? 0);
    return { machineBusy: (m.busy - machine.busy) / Math.max(1, m.total - machine.total), seconds };
  };
}
