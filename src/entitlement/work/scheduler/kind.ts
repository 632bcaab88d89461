// What the scheduler needs of one kind of due work (point reservations; entitlement expiry next). The scheduler owns
// the loop, the wake-ups, the lease, the retry policy and the metrics; a kind owns its table and its SQL.
//
// Adding a kind: write one file that returns a `DueWorkKind` (points/due-work.ts is the model), and add one line to
// `dueWorkKinds` in workers.ts, where the composition registers the kinds. Its table needs what point_reservations has
// for this: a status with a pending and an in-flight value, `due_at` (when the scheduler should next look: the due
// time, then a retry time, and while in flight the end of the lease), `attempt_count`, `locked_by`, and a partial index
// on `due_at` over the unfinished rows. The command that writes its rows reports their due time after commit
// (`CommittedWork.dueAt`, wakeups/wakeups.ts), which wakes a sleeping scheduler early, here or on another replica.
import type { Db } from "../../../shared/db.ts";

export type ClaimArgs = {
  /** The scheduler's clock: nothing whose due time is after it may be claimed (never early). */
  now: Date;
  /** The claim's lease: becomes the row's due_at, so an unfinished claim is due again (taken over) after it. */
  leaseUntil: Date;
  lockedBy: string;
  limit: number;
  maxAttempts: number;
};

export type ClaimedItem = {
  id: string;
  /** This claim's attempt, 1-based (the claim counted it, so a worker that dies still uses it up). */
  attemptCount: number;
  /** When the work was meant to happen: the lateness histogram measures from here. */
  scheduledAt: Date;
  /**
   * True when the claim found the item in flight with an expired lease on its last attempt and ended it FAILED at
   * once (a worker died on every attempt): it is reported, never executed.
   */
  exhausted: boolean;
  /**
   * What the execution locks besides the item itself (points: the user's balance row). The scheduler executes items
   * with the same key in the same transaction, in key order, so two transactions never wait on each other in a cycle.
   */
  lockKey: string;
};

/** The claim was lost to another worker before the finalize (lease expired): nothing was changed. */
export type ExecuteOutcome = "done" | "lost";

export type Failure = { lockedBy: string; lastError: string; attemptCount: number; now: Date; retryAt: Date | null };

export interface DueWorkKind<T extends ClaimedItem = ClaimedItem> {
  /** The `kind` label of metrics and logs. */
  readonly name: string;
  /** The earliest due_at of unfinished work (a lease end included), or undefined when there is none. */
  nextDueAt(db: Db): Promise<Date | undefined>;
  /**
   * Claims up to `limit` items with due_at and due time <= now, oldest due first, `for update skip locked`, setting
   * the in-flight status, locked_by, due_at = leaseUntil and attempt_count + 1; exhausted items are FAILED instead.
   */
  claim(db: Db, args: ClaimArgs): Promise<T[]>;
  /**
   * Does the work of one claimed item inside `tx`, finalized guarded by locked_by and the in-flight status. The
   * scheduler runs several items in one transaction (one commit per batch, not per item) and, when that transaction
   * fails, each item again in a transaction of its own; so `execute` must neither commit nor swallow SQL errors.
   * Throws when the work failed (the scheduler then calls `fail`).
   */
  execute(tx: Db, item: T, ctx: { lockedBy: string; now: Date }): Promise<ExecuteOutcome>;
  /** Back to pending, due at `retryAt`, or FAILED when `retryAt` is null; guarded like `execute`. True if changed. */
  fail(db: Db, item: T, failure: Failure): Promise<boolean>;
  /** Unfinished items due at `now` (the backlog gauge, read at scrape time). */
  countDue(db: Db, now: Date): Promise<number>;
  /** Items in FAILED (they need an operator). */
  countFailed(db: Db): Promise<number>;
}

/** The claim's test of a row it selects: in flight with its lease run out on the last attempt (see `exhausted`). */
export function exhaustedColumn(db: Db, maxAttempts: number) {
  return db`status = 'PROCESSING' and attempt_count >= ${maxAttempts} as exhausted`;
}

/**
 * The SET list of a kind's claim made in TypeScript (the expiries'), joined with `due` (selected with exhaustedColumn;
 * the updated table's own columns are the unqualified names): an exhausted row becomes FAILED with the reason, every
 * other one PROCESSING under this claim's lease and attempt. The points' claim makes the same assignments in the SQL
 * function point_claim, because it also writes the audit row of an exhausted reservation, and only functions write
 * audit rows.
 */
export function claimAssignments(db: Db, args: ClaimArgs) {
  return db`
    status = case when due.exhausted then 'FAILED' else 'PROCESSING' end,
    attempt_count = case when due.exhausted then attempt_count else attempt_count + 1 end,
    locked_by = case when due.exhausted then null else ${args.lockedBy} end,
    locked_at = case when due.exhausted then null else ${args.now}::timestamptz end,
    due_at = case when due.exhausted then due_at else ${args.leaseUntil}::timestamptz end,
    last_error = case when due.exhausted
      then 'lease expired on attempt ' || attempt_count || ': the scheduler stopped before finalizing'
      else last_error end,
    updated_at = ${args.now}`;
}

/**
 * The reads every kind's table answers alike, from the columns named at the top of this file: the earliest due_at
 * (`nextDueAt`, the idle scheduler's sleep) and the two gauges' counts. Not on the claim's path.
 */
export function dueTableReads(table: string): Pick<DueWorkKind, "nextDueAt" | "countDue" | "countFailed"> {
  return {
    async nextDueAt(db) {
      const [row] = await db<{ at: Date | null }[]>`
        select min(due_at) as at from ${db(table)} where status in ('PENDING', 'PROCESSING')`;
      return row?.at ?? undefined;
    },
    async countDue(db, now) {
      const [row] = await db<{ n: number }[]>`
        select count(*)::int as n from ${db(table)} where status in ('PENDING', 'PROCESSING') and due_at <= ${now}`;
      return row?.n ?? 0;
    },
    async countFailed(db) {
      const [row] = await db<{ n: number }[]>`select count(*)::int as n from ${db(table)} where status = 'FAILED'`;
      return row?.n ?? 0;
    },
  };
}
