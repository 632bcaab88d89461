// SQL of the scheduler's point-reservation kind (due-work.ts), one statement per function, handle first. Every
// finalize is guarded by `locked_by = me and status = 'PROCESSING'`, so a worker that lost its lease changes nothing.
import type { Db } from "../../../shared/db.ts";

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

/**
 * Claims due reservations oldest due first: PENDING ones (due_at is execute_at or a retry time) and PROCESSING ones
 * whose lease (due_at) ran out. `execute_at <= now` is checked again so nothing ever runs early. A lease-expired row
 * that already used every attempt becomes FAILED here, with an audit row, instead of being claimed again.
 */
export async function claimDueReservations(
  db: Db,
  args: { now: Date; leaseUntil: Date; lockedBy: string; limit: number; maxAttempts: number },
): Promise<ClaimedReservation[]> {
  const { now, maxAttempts } = args;
  const rows = await db<ClaimedRecord[]>`
    with due as materialized (
      select reservation_id, status = 'PROCESSING' and attempt_count >= ${maxAttempts} as exhausted
      from point_reservations
      where status in ('PENDING', 'PROCESSING') and due_at <= ${now} and execute_at <= ${now}
      order by due_at limit ${args.limit}
      for update skip locked
    ), claimed as (
      update point_reservations r
      set status = case when due.exhausted then 'FAILED' else 'PROCESSING' end,
          attempt_count = case when due.exhausted then r.attempt_count else r.attempt_count + 1 end,
          locked_by = case when due.exhausted then null else ${args.lockedBy} end,
          locked_at = case when due.exhausted then null else ${now}::timestamptz end,
          due_at = case when due.exhausted then r.due_at else ${args.leaseUntil}::timestamptz end,
          last_error = case when due.exhausted
            then 'lease expired on attempt ' || r.attempt_count || ': the scheduler stopped before finalizing'
            else r.last_error end,
          updated_at = ${now}
      from due
      where r.reservation_id = due.reservation_id
      returning r.reservation_id, r.user_id, r.point_amount::float8 as point_amount, r.execute_at, r.reason,
                r.trace_id, r.attempt_count, r.status, r.last_error
    ), audit as (
      insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, detail)
      select gen_random_uuid(), ${now}, reservation_id, user_id, 'FAIL', jsonb_build_object('last_error', last_error)
      from claimed where status = 'FAILED'
    )
    select reservation_id, user_id, point_amount, execute_at, reason, trace_id, attempt_count, status
    from claimed order by execute_at, reservation_id`;
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

/** A failed attempt: PENDING again (due at `retryAt`) or FAILED when `retryAt` is null; true when it changed. */
export async function failReservation(
  db: Db,
  args: { reservationId: string; lockedBy: string; now: Date; retryAt: Date | null; lastError: string },
): Promise<boolean> {
  const status = args.retryAt ? "PENDING" : "FAILED";
  const [row] = await db<{ n: number }[]>`
    with failed as (
      update point_reservations
      set status = ${status}, due_at = greatest(execute_at, coalesce(${args.retryAt}::timestamptz, due_at)),
          last_error = ${args.lastError}, locked_by = null, locked_at = null, updated_at = ${args.now}
      where reservation_id = ${args.reservationId} and locked_by = ${args.lockedBy} and status = 'PROCESSING'
      returning reservation_id, user_id, status
    ), audit as (
      insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, detail)
      select gen_random_uuid(), ${args.now}, reservation_id, user_id, 'FAIL',
             jsonb_build_object('last_error', ${args.lastError}::text)
      from failed where status = 'FAILED'
    )
    select count(*)::int as n from failed`;
  return (row?.n ?? 0) > 0;
}

/** The earliest due_at of an unfinished reservation (a lease end included). */
export async function nextReservationDueAt(db: Db): Promise<Date | undefined> {
  const [row] = await db<{ at: Date | null }[]>`
    select min(due_at) as at from point_reservations where status in ('PENDING', 'PROCESSING')`;
  return row?.at ?? undefined;
}

export async function countDueReservations(db: Db, now: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from point_reservations
    where status in ('PENDING', 'PROCESSING') and due_at <= ${now}`;
  return row?.n ?? 0;
}

export async function countFailedReservations(db: Db): Promise<number> {
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from point_reservations where status = 'FAILED'`;
  return row?.n ?? 0;
}
