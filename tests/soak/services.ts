// The soak's service processes: the built executables with their stock settings, plus only what the topology needs
// (the streams at three replicas, the players' issuer, the endpoints API). Unlike the drill's fleet (short leases and
// backoffs for recovery in seconds), a soak measures what an operator who changed nothing gets. Each process keeps
// its pid, so its resident memory can be read each minute, and logs into the soak folder.
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "../../tools/infra/net.ts";
import { waitUntil } from "../support/wait.ts";

export type SoakService = {
  label: string;
  url: string;
  running: () => boolean;
  /** True from its first /readyz 200 after a start until it is killed: the load and the streams go only there. */
  ready: () => boolean;
  start: () => Promise<void>;
  kill: () => Promise<void>;
  /** Resident memory in MiB, or undefined while it is down. */
  rssMb: () => number | undefined;
};

/** VmRSS of /proc/<pid>/status, in MiB. */
export function residentMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

export function createSoakService(label: string, binary: string, env: Record<string, string>, logDir: string) {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  let proc: Subprocess | undefined;
  let ready = false;
  const running = () => proc !== undefined && proc.exitCode === null && proc.signalCode === null;
  const service: SoakService = {
    label,
    url,
    running,
    ready: () => ready && running(),
    start: async () => {
      const log = openSync(join(logDir, `${label}.log`), "a");
      const fullEnv = { PATH: process.env.PATH ?? "", ...env, PORT: String(port), HOST: "127.0.0.1", HOSTNAME: label };
      proc = Bun.spawn([binary, "serve"], { env: fullEnv, stdout: log, stderr: log });
      closeSync(log);
      const answers = async () => {
        if (!running()) throw new Error(`${label} exited before /readyz answered 200 (see ${label}.log)`);
        // 10 s: under load the probe may wait behind the soak's own requests for one of fetch's connections.
        const status = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(10_000) }).then(
          (r) => r.status,
          () => 0,
        );
        return status === 200;
      };
      await waitUntil(answers, `${label}/readyz to answer 200`, 180_000, 250);
      ready = true;
    },
    kill: async () => {
      const p = proc;
      ready = false;
      p?.kill("SIGKILL");
      await p?.exited;
    },
    rssMb: () => (running() ? residentMb(proc?.pid) : undefined),
  };
  return service;
}
