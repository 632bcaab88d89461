// Readiness with a bounded cost. /readyz is open to anyone, and each probe was a database round trip: a flood of
// unauthenticated calls slowed every writer (docs/benchmarks.md). The probe's answer is now kept for a
// second and shared by every call meanwhile, so the database sees at most one probe a second per process.
// A probe is also bounded in time: a database that accepts the connection but never answers makes /readyz answer 503
// after `timeoutMs` instead of hanging until the load balancer gives up. A probe that has timed out is not started
// again while it is still pending (it holds a pool connection); later checks wait on it again, bounded as well.
// Requests also report what they meet: a pool that cannot open connections (SQLSTATE 53300 and its relatives) may
// still answer `select 1` on an idle connection, so a reported failure makes the service not ready for a while.
import type { Logger } from "./logger.ts";

export type Readiness = {
  /** Resolves when ready; rejects with the reason otherwise. */
  check: () => Promise<void>;
  /** A request found the database unavailable: not ready for `holdMs`, whatever the probe says. */
  reportUnavailable: (error: unknown) => void;
};

export type ReadinessOptions = {
  /** How long one probe's answer is reused (default 1s). */
  cacheMs?: number;
  /** How long a reported failure keeps the service not ready (default 5s). */
  holdMs?: number;
  /** How long a probe may take before it counts as failed (default 2s). */
  timeoutMs?: number;
  /** Monotonic milliseconds (default performance.now). */
  now?: () => number;
};

type Answer = { at: number; error?: unknown };

export function createReadiness(probe: () => Promise<void>, options: ReadinessOptions = {}): Readiness {
  const cacheMs = options.cacheMs ?? 1_000;
  const holdMs = options.holdMs ?? 5_000;
  const timeoutMs = options.timeoutMs ?? 2_000;
  const now = options.now ?? (() => performance.now());
  let answer: Answer | undefined;
  let running: Promise<Answer> | undefined;
  let pending: Promise<void> | undefined;
  let reported: { until: number; error: unknown } | undefined;

  const settle = (a: Answer) => (a.error === undefined ? undefined : Promise.reject(a.error));
  const startProbe = () => {
    const started = probe().finally(() => {
      if (pending === started) pending = undefined;
    });
    pending = started;
    return started;
  };

  return {
    check: async () => {
      const t = now();
      if (reported && t < reported.until) throw reported.error;
      if (answer && t - answer.at < cacheMs) return settle(answer);
      running ??= withTimeout(pending ?? startProbe(), timeoutMs)
        .then(
          () => ({ at: now() }),
          (error: unknown) => ({ at: now(), error }),
        )
        .then((fresh) => {
          answer = fresh;
          running = undefined;
          return fresh;
        });
      return settle(await running);
    },
    reportUnavailable: (error) => {
      reported = { until: now() + holdMs, error };
    },
  };
}

function withTimeout(probe: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the readiness probe did not answer within ${ms}ms`)), ms);
  });
  return Promise.race([probe, timeout]).finally(() => clearTimeout(timer));
}

/**
 * What /readyz logs. It is open to anyone, so a flood of probes while not ready must not flood the log: the first
 * failure of a run is logged with its error, and the recovery with the number of failed checks (as periodic workers
 * log their loops).
 */
export function createReadinessLog(log: Logger): { ready: () => void; notReady: (error: unknown) => void } {
  let failures = 0;
  return {
    ready: () => {
      if (failures > 0) log.info({ failed_checks: failures }, "ready again");
      failures = 0;
    },
    notReady: (error) => {
      if (++failures === 1) log.warn({ err: error }, "not ready");
    },
  };
}
