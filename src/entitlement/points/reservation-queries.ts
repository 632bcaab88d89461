// SQL of the reservation API (CONTRACT §3.1a): create, read, cancel. Handle first, so each runs inside the command's
// transaction or on the pool. The insert trigger NOTIFYs the scheduler (db/entitlement/003_points.sql).
import type { Db } from "../../shared/db.ts";

export type ReservationStatus = "PENDING" | "PROCESSING" | "DONE" | "FAILED" | "CANCELLED";

/** point_amount is bigint; read as float8 it is a number, exact below 2^53 (amounts are at most 1e9). */
export type ReservationRow = {
  reservation_id: string;
  user_id: string;
  point_amount: number;
  execute_at: Date;
  reason: string | null;
  status: ReservationStatus;
  created_at: Date;
  updated_at: Date;
  executed_at: Date | null;
  transaction_id: string | null;
  last_error: string | null;
};

const COLUMNS = (db: Db) => db`
  reservation_id, user_id, point_amount::float8 as point_amount, execute_at, reason, status, created_at, updated_at,
  executed_at, transaction_id, last_error`;

export type NewReservation = {
  reservationId: string;
  userId: string;
  pointAmount: number;
  executeAt: Date;
  reason: string | null;
  traceId: string;
  /** The token name; null when authentication is disabled. */
  caller: string | null;
  now: Date;
};

/** Inserts a PENDING reservation with its RESERVE audit row, in one statement. */
export async function insertReservation(db: Db, r: NewReservation): Promise<ReservationRow> {
  const [row] = await db<ReservationRow[]>`
    with reservation as (
      insert into point_reservations
        (reservation_id, user_id, point_amount, execute_at, reason, status, due_at, trace_id, created_by, created_at,
         updated_at)
      values (${r.reservationId}, ${r.userId}, ${r.pointAmount}, ${r.executeAt}, ${r.reason}, 'PENDING',
              ${r.executeAt}, ${r.traceId}, ${r.caller}, ${r.now}, ${r.now})
      returning *
    ), audit as (
      insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, trace_id, detail)
      select gen_random_uuid(), ${r.now}, reservation_id, user_id, 'RESERVE', ${r.caller}, ${r.traceId},
             jsonb_build_object('point_amount', point_amount, 'execute_at', execute_at)
      from reservation
    )
    select ${COLUMNS(db)} from reservation`;
  if (!row) throw new Error("insert into point_reservations returned no row");
  return row;
}

export async function findReservation(db: Db, reservationId: string): Promise<ReservationRow | undefined> {
  const [row] = await db<ReservationRow[]>`
    select ${COLUMNS(db)} from point_reservations where reservation_id = ${reservationId}`;
  return row;
}

/**
 * PENDING → CANCELLED with its CANCEL audit row; undefined when the reservation is in any other state (or unknown).
 * The row lock makes it exclusive with the scheduler's claim: whichever comes first wins, the other finds no row.
 */
export async function cancelPendingReservation(
  db: Db,
  args: { reservationId: string; caller: string | null; traceId: string; now: Date },
): Promise<ReservationRow | undefined> {
  const [row] = await db<ReservationRow[]>`
    with cancelled as (
      update point_reservations set status = 'CANCELLED', updated_at = ${args.now}
      where reservation_id = ${args.reservationId} and status = 'PENDING'
      returning *
    ), audit as (
      insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, trace_id)
      select gen_random_uuid(), ${args.now}, reservation_id, user_id, 'CANCEL', ${args.caller}, ${args.traceId}
      from cancelled
    )
    select ${COLUMNS(db)} from cancelled`;
  return row;
}

/**
 * Retention: DONE and CANCELLED reservations last updated at or before `threshold`, at most `limit` per statement
 * (ids collected once, as in retention/queries.ts); PENDING, PROCESSING and FAILED ones, the ledger and the balances
 * are never touched. Returns how many it deleted.
 */
export async function deleteFinishedReservations(db: Db, args: { threshold: Date; limit: number }): Promise<number> {
  const result = await db`
    delete from point_reservations
    where reservation_id = any(array(
      select reservation_id from point_reservations
      where status in ('DONE', 'CANCELLED') and updated_at <= ${args.threshold}
      limit ${args.limit}
      for update skip locked
    ))
    and status in ('DONE', 'CANCELLED') and updated_at <= ${args.threshold}`;
  return result.count;
}
