// SQL of the `points` operator subcommands (docs/operations.md): the runbook's statements, each touching only its rows.
import type { Db } from "../../shared/db.ts";
import type { ReservationStatus } from "../features/points/reservation-queries.ts";
import { DUE_CHANNEL } from "../work/wakeups.ts";
import { type RequeuedReservation, requeueReservations } from "../write/point-requeue.ts";

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

/**
 * FAILED → PENDING, due now, with a fresh attempt budget and a REQUEUE audit row, for one reservation or (no id) every
 * FAILED one (write/point-requeue.ts); then wakes the schedulers.
 */
export async function requeueFailedReservations(
  db: Db,
  options: { reservationId?: string },
): Promise<RequeuedReservation[]> {
  const rows = await requeueReservations(db, options);
  // Due now: wakes every scheduler at once (they LISTEN on this channel) instead of at its next poll.
  if (rows.length > 0) await db`select pg_notify(${DUE_CHANNEL}, '0')`;
  return rows;
}

export async function findReservationStatus(db: Db, reservationId: string): Promise<string | undefined> {
  const [row] = await db<{ status: string }[]>`
    select status from point_reservations where reservation_id = ${reservationId}::uuid`;
  return row?.status;
}
