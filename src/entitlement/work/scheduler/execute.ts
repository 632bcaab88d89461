// Executing a claimed batch. Items are split into lanes by lock key and each lane runs in ONE transaction: a commit
// waits for the WAL flush, and one commit per item capped a replica at a quarter of what it executes with the flush out
// of the way (docs/benchmarks.md); a transaction per lane keeps the flush and the durability. A lane whose transaction
// fails is executed again item by item, each in its own transaction, so one failing item fails alone and the others
// still commit. Lanes never share a lock key and each runs its items in key order, so two transactions, of this replica
// or of another, always take the keys' row locks in the same order and cannot deadlock.
import { type BackoffPolicy, backoffMs, errorText } from "../../../shared/backoff.ts";
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { ClaimedItem, DueWorkKind, ExecuteOutcome } from "./kind.ts";
import type { SchedulerMetrics } from "./metrics.ts";

export type ExecuteDeps = {
  sql: Sql;
  log: Logger;
  now: Clock;
  metrics: SchedulerMetrics;
  lockedBy: string;
  settings: { maxAttempts: number; errorMessageMaxLength: number; backoff: BackoffPolicy; concurrency: number };
  random?: () => number;
};

/** At most `lanes` runs of items, in lock-key order, each key in exactly one lane. */
export function lanesByLockKey<T extends ClaimedItem>(items: readonly T[], lanes: number): T[][] {
  const sorted = [...items].sort((a, b) => (a.lockKey < b.lockKey ? -1 : a.lockKey > b.lockKey ? 1 : 0));
  const size = Math.ceil(sorted.length / Math.max(1, lanes));
  const result: T[][] = [];
  let lane: T[] = [];
  for (const item of sorted) {
    const last = lane[lane.length - 1];
    if (last && lane.length >= size && last.lockKey !== item.lockKey) {
      result.push(lane);
      lane = [];
    }
    lane.push(item);
  }
  if (lane.length) result.push(lane);
  return result;
}

/** Executes the claimed items `concurrency` lanes at once; returns how many were executed. Never throws. */
export async function executeClaimed(deps: ExecuteDeps, kind: DueWorkKind, items: ClaimedItem[]): Promise<number> {
  const lanes = lanesByLockKey(items, deps.settings.concurrency);
  const executed = await Promise.all(lanes.map((lane) => executeLane(deps, kind, lane)));
  return executed.reduce((a, b) => a + b, 0);
}

async function executeLane(deps: ExecuteDeps, kind: DueWorkKind, items: ClaimedItem[]): Promise<number> {
  const ctx = { lockedBy: deps.lockedBy, now: deps.now() };
  try {
    // Issued together, the statements are pipelined on the transaction's connection and run in this order.
    const outcomes = await deps.sql.begin((tx) => Promise.all(items.map((item) => kind.execute(tx, item, ctx))));
    return items.filter((item, i) => report(deps, kind, item, outcomes[i] as ExecuteOutcome, ctx.now)).length;
  } catch (error) {
    if (items.length === 1) {
      await recordFailure(deps, kind, items[0] as ClaimedItem, error);
      return 0;
    }
    deps.log.debug({ err: error, kind: kind.name, items: items.length }, "batch failed; executing its items alone");
    let executed = 0;
    for (const item of items) if (await executeAlone(deps, kind, item)) executed += 1;
    return executed;
  }
}

async function executeAlone(deps: ExecuteDeps, kind: DueWorkKind, item: ClaimedItem): Promise<boolean> {
  const ctx = { lockedBy: deps.lockedBy, now: deps.now() };
  try {
    const outcome = await deps.sql.begin((tx) => kind.execute(tx, item, ctx));
    return report(deps, kind, item, outcome, ctx.now);
  } catch (error) {
    await recordFailure(deps, kind, item, error);
    return false;
  }
}

/** Counts a committed outcome; true when the item was executed. */
function report(deps: ExecuteDeps, kind: DueWorkKind, item: ClaimedItem, outcome: ExecuteOutcome, at: Date): boolean {
  if (outcome === "lost") {
    deps.metrics.count(kind.name, "lost");
    deps.log.warn({ kind: kind.name, id: item.id }, "lease lost before the finalize; another worker owns the item");
    return false;
  }
  deps.metrics.count(kind.name, "executed");
  deps.metrics.observeLateness(kind.name, (at.getTime() - item.scheduledAt.getTime()) / 1000);
  return true;
}

/** Retry with backoff, or FAILED on the last attempt. Never throws: an unrecorded failure is retried after the lease. */
async function recordFailure(deps: ExecuteDeps, kind: DueWorkKind, item: ClaimedItem, error: unknown): Promise<void> {
  const { settings } = deps;
  const now = deps.now();
  const last = item.attemptCount >= settings.maxAttempts;
  const retryAt = last ? null : new Date(now.getTime() + backoffMs(settings.backoff, item.attemptCount, deps.random));
  const lastError = errorText(error, settings.errorMessageMaxLength);
  const fields = { kind: kind.name, id: item.id, attempt: item.attemptCount, error: lastError };
  try {
    const changed = await kind.fail(deps.sql, item, {
      lockedBy: deps.lockedBy,
      lastError,
      attemptCount: item.attemptCount,
      now,
      retryAt,
    });
    if (!changed) return;
    deps.metrics.count(kind.name, last ? "failed" : "retry_scheduled");
    if (last) deps.log.error(fields, "scheduled item FAILED after its last attempt; it needs an operator");
    else deps.log.warn({ ...fields, retry_at: retryAt }, "scheduled item failed; retry scheduled");
  } catch (e) {
    deps.log.warn({ ...fields, err: e }, "could not record a failed execution; it is retried after its lease");
  }
}
