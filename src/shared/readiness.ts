// Readiness with a bounded cost. /readyz is open to anyone, and each probe was a database round trip: a flood of ~6k
// unauthenticated calls a second raised the writers' p50 from 8 ms to 75 ms. The probe's answer is now kept for a
// second and shared by every call meanwhile, so the database sees at most one probe a second per process.
// Requests also report what they meet: a pool that cannot open connections (SQLSTATE 53300 and its relatives) may
// still answer `select 1` on an idle connection, so a reported failure makes the service not ready for a while.

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
  /** Monotonic milliseconds (default performance.now). */
  now?: () => number;
};

type Answer = { at: number; error?: unknown };

export function createReadiness(probe: () => Promise<void>, options: ReadinessOptions = {}): Readiness {
  const cacheMs = options.cacheMs ?? 1_000;
  const holdMs = options.holdMs ?? 5_000;
  const now = options.now ?? (() => performance.now());
  let answer: Answer | undefined;
  let running: Promise<Answer> | undefined;
  let reported: { until: number; error: unknown } | undefined;

  const settle = (a: Answer) => (a.error === undefined ? undefined : Promise.reject(a.error));

  return {
    check: async () => {
      const t = now();
      if (reported && t < reported.until) throw reported.error;
      if (answer && t - answer.at < cacheMs) return settle(answer);
      running ??= probe()
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
