// SQL of reservations outside the commands (each one call of `point_reserve` or `point_cancel`, write/): the read of
// one, and retention. Handle first.
import type { Db } from "../../../shared/db.ts";

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

export async function findReservation(db: Db, reservationId: string): Promise<ReservationRow | undefined> {
  const [row] = await db<ReservationRow[]>`
    select ${COLUMNS(db)} from point_reservations where reservation_id = ${reservationId}`;
  return row;
}
