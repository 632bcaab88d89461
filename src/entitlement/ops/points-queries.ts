// SQL of the `points` operator commands (docs/operations.md): the runbook's statements, each touching only its rows.
import type { Db } from "../../shared/db.ts";
import type { ReservationStatus } from "../features/points/reservation-queries.ts";
import { DUE_CHANNEL } from "../work/wakeups.ts";

export type PointsStats = {
  byStatus: Record<ReservationStatus, number>;
  /** PENDING or lease-expired PROCESSING reservations whose due time has passed. */
  dueNow: number;
  /** The most overdue of them: how late it already is. */
  oldestDue: { reservationId: string; lateSeconds: number } | null;
};

export async function readPointsStats(db: Db): Promise<PointsStats> {
  const rows = await db<{ status: ReservationStatus; count: number }[]>`
    select status, count(*)::int as count from point_reservations group by status`;
  const byStatus = { PENDING: 0, PROCESSING: 0, DONE: 0, FAILED: 0, CANCELLED: 0 };
  for (const r of rows) byStatus[r.status] = r.count;
  const [due] = await db<{ n: number }[]>`
    select count(*)::int as n from point_reservations
    where status in ('PENDING', 'PROCESSING') and due_at <= now()`;
  const [oldest] = await db<{ reservation_id: string; late: number }[]>`
    select reservation_id, extract(epoch from now() - execute_at)::float8 as late
    from point_reservations
    where status in ('PENDING', 'PROCESSING') and due_at <= now()
    order by due_at limit 1`;
  return {
    byStatus,
    dueNow: due?.n ?? 0,
    oldestDue: oldest ? { reservationId: oldest.reservation_id, lateSeconds: Math.max(0, oldest.late) } : null,
  };
}

export type RequeuedReservation = {
  reservation_id: string;
  user_id: string;
  point_amount: number;
  previous_attempts: number;
  last_error: string | null;
};

/**
 * FAILED → PENDING, due now (never before execute_at), with a fresh attempt budget and a REQUEUE audit row, for one
 * reservation or (no id) every FAILED one; then wakes the schedulers. A FAILED reservation was never granted (the
 * grant and DONE commit together), and the ledger's unique reservation_id refuses a second grant regardless.
 */
export async function requeueFailedReservations(
  db: Db,
  options: { reservationId?: string },
): Promise<RequeuedReservation[]> {
  const only = options.reservationId === undefined ? db`` : db`and reservation_id = ${options.reservationId}::uuid`;
  const rows = await db<RequeuedReservation[]>`
    with requeued as (
      update point_reservations r
      set status = 'PENDING', attempt_count = 0, due_at = greatest(r.execute_at, now()), locked_by = null,
          locked_at = null, updated_at = now()
      from (select reservation_id, attempt_count from point_reservations where status = 'FAILED' ${only} for update) old
      where r.reservation_id = old.reservation_id
      returning r.reservation_id, r.user_id, r.point_amount::float8 as point_amount,
                old.attempt_count as previous_attempts, r.last_error
    ), audit as (
      insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, detail)
      select gen_random_uuid(), now(), reservation_id, user_id, 'REQUEUE', 'operator',
             jsonb_build_object('previous_attempts', previous_attempts, 'last_error', last_error)
      from requeued
    )
    select * from requeued order by reservation_id`;
  // Due now: wakes every scheduler at once (they LISTEN on this channel) instead of at its next poll.
  if (rows.length > 0) await db`select pg_notify(${DUE_CHANNEL}, '0')`;
  return [...rows];
}

export async function findReservationStatus(db: Db, reservationId: string): Promise<string | undefined> {
  const [row] = await db<{ status: string }[]>`
    select status from point_reservations where reservation_id = ${reservationId}::uuid`;
  return row?.status;
}
