// The one scheduler of Entitlement: it runs every kind of due work (kind.ts) on time and exactly once.
// Each pass claims a batch of due items per kind (`for update skip locked`, a lease, locked_by) and executes it in
// `concurrency` lanes, one transaction each (batches.ts, execute.ts); a full batch is followed at once by the next.
// Otherwise it asks every kind for its next due time and sleeps until the earliest, capped by the poll interval, unless
// new work due before that is announced (in memory by this process's commands, by NOTIFY from the other replicas:
// work/wakeups.ts). Failures retry with backoff and end FAILED after the maximum. It never dies: a failed pass is
// logged once per run of failures, counted and retried after the poll interval. On abort it finishes the batch in hand.
import type { BackoffPolicy } from "../../../shared/backoff.ts";
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import { untilNextMs } from "../../../shared/periodic.ts";
import type { Worker } from "../../../shared/runtime.ts";
import { type Clock, Waker } from "../../../shared/runtime.ts";
import type { CommittedWork } from "../../features/commands/committed.ts";
import type { WakeSource } from "../wakeups.ts";
import { createBatches, type PassReport } from "./batches.ts";
import type { DueWorkKind } from "./kind.ts";
import type { SchedulerMetrics } from "./metrics.ts";

/**
 * How long to wait when work is due but the claim found none of it free (another replica is claiming it right now):
 * its claim moves the rows' due_at to their lease end within milliseconds, so a short pause avoids a busy loop.
 */
const CONTENDED_DELAY_MS = 10;

export type SchedulerSettings = {
  /** The longest sleep: the safety net for a missed wake-up. */
  pollIntervalMs: number;
  /** The longest sleep after a pass that claimed nothing; absent or not above the poll interval: the poll interval. */
  idlePollIntervalMs?: number;
  batchSize: number;
  /** The size a kind's claims grow to while they come back full (a burst); absent or smaller: no growth. */
  maxBatchSize?: number;
  /** Transactions (lanes of a batch, execute.ts) in flight at once. */
  concurrency: number;
  leaseMs: number;
  maxAttempts: number;
  errorMessageMaxLength: number;
  backoff: BackoffPolicy;
};

export type SchedulerDeps = {
  sql: Sql;
  log: Logger;
  now: Clock;
  metrics: SchedulerMetrics;
  settings: SchedulerSettings;
  /** The locked_by of this scheduler (src/shared/runtime.ts workerId). */
  lockedBy: string;
  kinds: readonly DueWorkKind[];
  wakeups: WakeSource;
  /** Told after a pass committed executions: they wrote events for the relay. */
  onCommitted?: (work: CommittedWork) => void;
  random?: () => number;
};

export type Scheduler = Worker & {
  /** One claim → execute pass over every kind, for tests and operators. */
  runOnce(): Promise<PassReport>;
  /** Look for due work now rather than at the planned wake-up. */
  wake(): void;
};

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const waker = new Waker();
  const batches = createBatches(deps);
  const failures = { count: 0 };
  /** Epoch ms of the planned wake-up: news of work due earlier wakes the loop; -Infinity while it works. */
  let wakeAt = Number.NEGATIVE_INFINITY;
  const onDue = (at: number) => {
    if (!Number.isFinite(at) || at < wakeAt) waker.wake();
  };

  async function run(signal: AbortSignal): Promise<void> {
    const stopListening = deps.wakeups.onDue(onDue, signal);
    while (!signal.aborted) {
      wakeAt = Number.NEGATIVE_INFINITY;
      const report = await pass(deps, failures, (kind) => batches.run(kind, true));
      if (report.full) continue;
      // From here on any news wakes: the probe below may already have missed what it announces.
      wakeAt = Number.POSITIVE_INFINITY;
      const delay = failures.count > 0 ? deps.settings.pollIntervalMs : await idleDelay(deps, report);
      wakeAt = deps.now().getTime() + delay;
      await waker.wait(delay, signal);
    }
    // A claim issued ahead holds its items' leases: execute them (the batch in hand) rather than leave them leased.
    const held = deps.kinds.filter((k) => batches.holdsAhead(k));
    await pass(deps, failures, (kind) => batches.run(kind, false), held);
    await stopListening();
  }

  return {
    name: "scheduler",
    run,
    runOnce: () => pass(deps, failures, (kind) => batches.run(kind, false)),
    wake: () => waker.wake(),
  };
}

/** Every kind once; never throws: a failure is counted, and logged once per run of failures. */
async function pass(
  deps: SchedulerDeps,
  failures: { count: number },
  runKind: (kind: DueWorkKind) => Promise<PassReport>,
  kinds = deps.kinds,
): Promise<PassReport> {
  const total: PassReport = { claimed: 0, executed: 0, full: false };
  let failed = false;
  for (const kind of kinds) {
    try {
      const r = await runKind(kind);
      total.claimed += r.claimed;
      total.executed += r.executed;
      total.full ||= r.full;
    } catch (error) {
      failed = true;
      deps.metrics.countError(kind.name);
      if (failures.count === 0) deps.log.warn({ err: error, kind: kind.name }, "scheduler pass failed; retrying");
    }
  }
  if (failed) failures.count += 1;
  else if (failures.count > 0) {
    deps.log.info({ failures: failures.count }, "scheduler recovered");
    failures.count = 0;
  }
  return total;
}

/**
 * Nothing more was due: the sleep until the earliest due time of any kind, at most the poll interval, or the idle
 * interval after a pass that claimed nothing (new work wakes the loop).
 */
async function idleDelay(deps: SchedulerDeps, report: PassReport): Promise<number> {
  const { pollIntervalMs, idlePollIntervalMs } = deps.settings;
  const capMs = report.claimed === 0 ? Math.max(pollIntervalMs, idlePollIntervalMs ?? 0) : pollIntervalMs;
  let next: Date | undefined;
  try {
    for (const kind of deps.kinds) {
      const at = await kind.nextDueAt(deps.sql);
      if (at && (!next || at < next)) next = at;
    }
  } catch {
    return pollIntervalMs; // the pass reports database trouble; this only waits
  }
  return untilNextMs(deps.now().getTime(), next, { capMs, dueMs: CONTENDED_DELAY_MS });
}
