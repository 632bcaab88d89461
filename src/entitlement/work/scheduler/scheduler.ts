// The one scheduler of Entitlement: it runs every kind of due work (kinds.ts) on time and exactly once.
// Each pass claims a batch of due items per kind (`for update skip locked`, a lease, locked_by) and executes it in
// `concurrency` lanes, one transaction each (execute.ts); a full batch is followed at once by the next. Otherwise it asks every
// kind for its next due time and sleeps until the earliest, capped by the poll interval, unless new work due before
// that is announced (in memory by this process's commands, by NOTIFY from the other replicas: wakeups/wakeups.ts). Failures retry with backoff and end FAILED after the maximum. It never dies: a failed pass is logged once
// per run of failures, counted and retried after the poll interval. On abort it finishes the batch in hand.
import type { BackoffPolicy } from "../../../shared/backoff.ts";
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Worker } from "../../../shared/runtime.ts";
import { type Clock, Waker } from "../../../shared/runtime.ts";
import type { CommittedWork } from "../../write/committed.ts";
import type { WakeSource } from "../wakeups.ts";
import { executeClaimed } from "./execute.ts";
import type { ClaimedItem, DueWorkKind } from "./kind.ts";
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

export type PassReport = { claimed: number; executed: number; full: boolean };

export type Scheduler = Worker & {
  /** One claim → execute pass over every kind, for tests and operators. */
  runOnce(): Promise<PassReport>;
  /** Look for due work now rather than at the planned wake-up. */
  wake(): void;
};

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const { settings, log } = deps;
  const waker = new Waker();
  /** Epoch ms of the planned wake-up: news of work due earlier wakes the loop; -Infinity while it works. */
  let wakeAt = Number.NEGATIVE_INFINITY;
  let failures = 0;
  /**
   * Each kind's next claim size: twice the last one while claims come back full, up to maxBatchSize, and the
   * configured size again after one that is not. A burst (2,000 expiries due at one instant) then takes a few passes
   * instead of twenty, each with fewer claims and lane commits per item, while a trickle keeps small batches.
   */
  const sizes = new Map<string, number>();
  const maxBatch = Math.max(settings.batchSize, settings.maxBatchSize ?? 0);

  const onDue = (at: number) => {
    if (!Number.isFinite(at) || at < wakeAt) waker.wake();
  };

  /**
   * A kind's next claim, issued while the current batch executes (the loop's `ahead`): in a burst the claim of the
   * next batch overlaps the lanes of this one, so the scheduler never waits for a claim between two full batches.
   */
  const ahead = new Map<string, Promise<ClaimedItem[]>>();

  function claim(kind: DueWorkKind, limit: number): Promise<ClaimedItem[]> {
    const now = deps.now();
    return kind.claim(deps.sql, {
      now,
      leaseUntil: new Date(now.getTime() + settings.leaseMs),
      lockedBy: deps.lockedBy,
      limit,
      maxAttempts: settings.maxAttempts,
    });
  }

  async function passKind(kind: DueWorkKind, claimAhead: boolean): Promise<PassReport> {
    const size = sizes.get(kind.name) ?? settings.batchSize;
    const claimed = ahead.get(kind.name);
    ahead.delete(kind.name);
    const items = await (claimed ?? claim(kind, size));
    const full = items.length === size;
    const next = full ? Math.min(size * 2, maxBatch) : settings.batchSize;
    sizes.set(kind.name, next);
    if (full && claimAhead) {
      const nextClaim = claim(kind, next);
      nextClaim.catch(() => {}); // awaited by the next pass, which reports a failure
      ahead.set(kind.name, nextClaim);
    }
    const exhausted = items.filter((i) => i.exhausted);
    if (exhausted.length) {
      deps.metrics.count(kind.name, "failed", exhausted.length);
      log.error(
        { kind: kind.name, ids: exhausted.map((i) => i.id) },
        "scheduled items FAILED: every attempt was claimed and never finalized",
      );
    }
    const executed = await executeClaimed(
      deps,
      kind,
      items.filter((i) => !i.exhausted),
    );
    if (executed > 0) deps.onCommitted?.({ events: true });
    return { claimed: items.length, executed, full: full || ahead.has(kind.name) };
  }

  /** Every kind once; never throws. `claimAhead`: a full batch's kind claims its next batch meanwhile. */
  async function pass(claimAhead = false, kinds = deps.kinds): Promise<PassReport> {
    const total: PassReport = { claimed: 0, executed: 0, full: false };
    let failed = false;
    for (const kind of kinds) {
      try {
        const r = await passKind(kind, claimAhead);
        total.claimed += r.claimed;
        total.executed += r.executed;
        total.full ||= r.full;
      } catch (error) {
        failed = true;
        deps.metrics.countError(kind.name);
        if (failures === 0) log.warn({ err: error, kind: kind.name }, "scheduler pass failed; retrying");
      }
    }
    if (failed) failures += 1;
    else if (failures > 0) {
      log.info({ failures }, "scheduler recovered");
      failures = 0;
    }
    return total;
  }

  /** Milliseconds until the earliest due time of any kind, capped by `capMs`. */
  async function delayUntilNextDue(capMs: number): Promise<number> {
    let next = Number.POSITIVE_INFINITY;
    try {
      for (const kind of deps.kinds) {
        const at = await kind.nextDueAt(deps.sql);
        if (at) next = Math.min(next, at.getTime());
      }
    } catch {
      return settings.pollIntervalMs; // the pass reports database trouble; this only waits
    }
    const now = deps.now().getTime();
    if (next <= now) return CONTENDED_DELAY_MS;
    // +1: a timer may fire within the millisecond before the due time, and a claim then would find nothing.
    return Math.min(next - now + 1, capMs);
  }

  async function run(signal: AbortSignal): Promise<void> {
    const stopListening = deps.wakeups.onDue(onDue, signal);
    while (!signal.aborted) {
      wakeAt = Number.NEGATIVE_INFINITY;
      const report = await pass(true);
      if (report.full) continue;
      // From here on any news wakes: the probe below may already have missed what it announces.
      wakeAt = Number.POSITIVE_INFINITY;
      // Nothing was due: sleep until the next due time, and without one at most the idle interval (new work wakes).
      const capMs =
        report.claimed === 0
          ? Math.max(settings.pollIntervalMs, settings.idlePollIntervalMs ?? 0)
          : settings.pollIntervalMs;
      const delay = failures > 0 ? settings.pollIntervalMs : await delayUntilNextDue(capMs);
      wakeAt = deps.now().getTime() + delay;
      await waker.wait(delay, signal);
    }
    // A claim issued ahead holds its items' leases: execute them (the batch in hand) rather than leave them leased.
    await pass(
      false,
      deps.kinds.filter((k) => ahead.has(k.name)),
    );
    await stopListening();
  }

  return { name: "scheduler", run, runOnce: () => pass(), wake: () => waker.wake() };
}
