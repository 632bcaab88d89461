// The compiled services as the drill runs them: two Entitlement replicas and one Notification, with short leases and
// backoffs so that recovery takes seconds. Each process logs into the drill folder; an exit the drill did not cause
// is recorded as a finding.

import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { freePort } from "../../tools/infra/net.ts";
import { waitUntil } from "../support/wait.ts";

export type ServiceName = "entitlement" | "notification";

export type Service = {
  label: string;
  url: string;
  running: () => boolean;
  start: () => Promise<void>;
  /** Sends `signal` and resolves with the exit code (SIGKILL: at once; SIGTERM: after the drain). */
  signal: (signal: "SIGKILL" | "SIGTERM", timeoutMs?: number) => Promise<number | null>;
};

export type Fleet = { replicas: Service[]; notification: Service; all: Service[]; token: string; problems: string[] };

const FAST_RECOVERY = {
  LOG_LEVEL: "info",
  ENTITLEMENT_OUTBOX_LEASE: "3s",
  ENTITLEMENT_OUTBOX_POLL_INTERVAL: "500ms",
  ENTITLEMENT_OUTBOX_BACKOFF_BASE: "250ms",
  ENTITLEMENT_OUTBOX_BACKOFF_MIN: "250ms",
  ENTITLEMENT_OUTBOX_BACKOFF_MAX: "2s",
  // The scheduler's claims (expiries, point reservations): a claim of a killed replica is taken over after 3s.
  ENTITLEMENT_SCHEDULER_LEASE: "3s",
  ENTITLEMENT_SCHEDULER_BACKOFF_BASE: "250ms",
  ENTITLEMENT_SCHEDULER_BACKOFF_MIN: "250ms",
  ENTITLEMENT_SCHEDULER_BACKOFF_MAX: "2s",
  ENTITLEMENT_RATE_LIMIT_ENABLED: "false",
  NOTIFICATION_DELIVERY_LEASE: "3s",
  NOTIFICATION_DELIVERY_POLL_INTERVAL: "500ms",
  NOTIFICATION_DELIVERY_BACKOFF_BASE: "250ms",
  NOTIFICATION_DELIVERY_BACKOFF_MIN: "250ms",
  NOTIFICATION_DELIVERY_BACKOFF_MAX: "2s",
};

async function waitReady(url: string, alive: () => boolean, timeoutMs: number): Promise<void> {
  const ready = async () => {
    if (!alive()) throw new Error(`${url}: the process exited before /readyz answered 200`);
    const status = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status,
      () => 0,
    );
    return status === 200;
  };
  await waitUntil(ready, `${url}/readyz to answer 200`, timeoutMs, 200);
}

function createService(
  label: string,
  binary: string,
  env: Record<string, string>,
  logDir: string,
  problems: string[],
): Service {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  let proc: Subprocess | undefined;
  let expectExit = false;
  const service: Service = {
    label,
    url,
    running: () => proc !== undefined && proc.exitCode === null && proc.signalCode === null,
    start: async () => {
      const log = openSync(join(logDir, `${label}.log`), "a");
      const p = Bun.spawn([binary, "serve"], {
        env: { PATH: process.env.PATH ?? "", ...FAST_RECOVERY, ...env, PORT: String(port), HOST: "127.0.0.1" },
        stdout: log,
        stderr: log,
      });
      closeSync(log);
      proc = p;
      expectExit = false;
      void p.exited.then((code) => {
        if (!expectExit && proc === p) problems.push(`${label} exited on its own (code ${code}, ${p.signalCode})`);
      });
      await waitReady(url, () => p.exitCode === null && p.signalCode === null, 60_000);
    },
    signal: async (signal, timeoutMs = 30_000) => {
      const p = proc;
      if (!p) return null;
      expectExit = true;
      p.kill(signal);
      const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
      const code = await p.exited;
      clearTimeout(timer);
      return code;
    },
  };
  return service;
}

/** Creates (does not start) the three processes; an API token with read+write is configured and returned. */
export function createFleet(options: {
  dist: string;
  logDir: string;
  databaseUrl: string;
  natsUrl: string;
  /** Set for every process of the fleet (the stream replica counts of a topology). */
  env?: Record<string, string>;
}): Fleet {
  const token = `ent_drill_${crypto.randomUUID()}`;
  const common = { DATABASE_URL: options.databaseUrl, NATS_URL: options.natsUrl, ...options.env };
  const problems: string[] = [];
  const entitlement = (n: number) =>
    createService(
      `entitlement-${n}`,
      join(options.dist, "entitlement"),
      {
        ...common,
        HOSTNAME: `drill-entitlement-${n}`,
        ENTITLEMENT_AUTH_TOKENS: tokenEntryLine("drill", token, "read+write"),
      },
      options.logDir,
      problems,
    );
  const replicas = [entitlement(1), entitlement(2)];
  const notification = createService(
    "notification",
    join(options.dist, "notification"),
    { ...common, HOSTNAME: "drill-notification" },
    options.logDir,
    problems,
  );
  return { replicas, notification, all: [...replicas, notification], token, problems };
}

/** Kills whatever still runs, synchronously (used at exit, whatever happened). */
export function killFleet(fleet: Fleet | undefined): void {
  for (const s of fleet?.all ?? []) if (s.running()) void s.signal("SIGKILL");
}
