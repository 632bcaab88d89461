// The scheduler's claim of due point reservations: one call of `point_claim` (db/entitlement/functions/), which also
// ends FAILED, with its audit row, a lease-expired reservation that used every attempt.
import type { Db } from "../../shared/db.ts";

export type ClaimedReservation = {
  reservationId: string;
  userId: string;
  pointAmount: number;
  executeAt: Date;
  reason: string | null;
  traceId: string | null;
  attemptCount: number;
  status: "PROCESSING" | "FAILED";
};

type ClaimedRecord = {
  reservation_id: string;
  user_id: string;
  point_amount: number;
  execute_at: Date;
  reason: string | null;
  trace_id: string | null;
  attempt_count: number;
  status: "PROCESSING" | "FAILED";
};

/** Oldest due first; the FAILED ones are returned with that status and are not to be executed. */
export async function claimDueReservations(
  db: Db,
  args: { now: Date; leaseUntil: Date; lockedBy: string; limit: number; maxAttempts: number },
): Promise<ClaimedReservation[]> {
  // point_amount is at most 1e9, so float8 carries it exactly.
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
