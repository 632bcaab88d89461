// The previous release's scheduler and operator calls of the points (640b121, src/entitlement/write/point-*.ts), as
// it sends them, frozen: the claim, the execution (by position), a failed attempt and the requeue.
import type { Db } from "../../src/shared/db.ts";

export type PreviousClaimed = {
  reservationId: string;
  userId: string;
  pointAmount: number;
  executeAt: Date;
  reason: string | null;
  traceId: string | null;
  attemptCount: number;
  status: string;
};

type ClaimedRecord = {
  reservation_id: string;
  user_id: string;
  point_amount: number;
  execute_at: Date;
  reason: string | null;
  trace_id: string | null;
  attempt_count: number;
  status: string;
};

export async function previousClaim(
  db: Db,
  args: { now: Date; leaseUntil: Date; lockedBy: string; limit: number; maxAttempts: number },
): Promise<PreviousClaimed[]> {
  const rows = await db<ClaimedRecord[]>`
    select reservation_id, user_id, point_amount::float8 as point_amount, execute_at, reason, trace_id, attempt_count,
           status
    from point_claim(p_now => ${args.now}::timestamptz, p_lease_until => ${args.leaseUntil}::timestamptz,
                     p_locked_by => ${args.lockedBy}::text, p_limit => ${args.limit}::int,
                     p_max_attempts => ${args.maxAttempts}::int)`;
  return rows.map((r) => ({
    reservationId: r.reservation_id,
    userId: r.user_id,
    pointAmount: r.point_amount,
    executeAt: r.execute_at,
    reason: r.reason,
    traceId: r.trace_id,
    attemptCount: r.attempt_count,
    status: r.status,
  }));
}

export type PreviousExecution = {
  reservationId: string;
  lockedBy: string;
  transactionId: string;
  eventId: string;
  now: Date;
  subject: string;
  payload: Record<string, string | number>;
};

export async function previousExecute(
  db: Db,
  e: PreviousExecution,
): Promise<{ finalized: number; granted: number; balanceAfter: number | null }> {
  const [row] = await db<{ finalized: number; granted: number; balance_after: number | null }[]>`
    select finalized, granted, balance_after::float8 as balance_after
    from point_execute(${e.reservationId}, ${e.lockedBy}, ${e.transactionId}, ${e.eventId}, ${e.now}, ${e.subject},
                       ${db.json(e.payload)}::jsonb)`;
  return { finalized: row?.finalized ?? 0, granted: row?.granted ?? 0, balanceAfter: row?.balance_after ?? null };
}

export async function previousFail(
  db: Db,
  args: { reservationId: string; lockedBy: string; now: Date; retryAt: Date | null; lastError: string },
): Promise<boolean> {
  const [row] = await db<{ changed: boolean }[]>`
    select point_fail(p_reservation_id => ${args.reservationId}::uuid, p_locked_by => ${args.lockedBy}::text,
                      p_now => ${args.now}::timestamptz, p_retry_at => ${args.retryAt}::timestamptz,
                      p_last_error => ${args.lastError}::text) as changed`;
  return row?.changed ?? false;
}

export async function previousRequeue(db: Db, options: { reservationId?: string }): Promise<unknown[]> {
  const rows = await db`
    select reservation_id, user_id, point_amount::float8 as point_amount, previous_attempts, last_error
    from point_requeue(${options.reservationId ?? null}::uuid)`;
  return [...rows];
}
