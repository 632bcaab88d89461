// The operator's requeue of FAILED point reservations: one call of `point_requeue` (db/entitlement/functions/), each
// reservation PENDING again with a fresh attempt budget and its REQUEUE audit row.
import type { Db } from "../../shared/db.ts";

export type RequeuedReservation = {
  reservation_id: string;
  user_id: string;
  point_amount: number;
  previous_attempts: number;
  last_error: string | null;
};

/** One reservation, or every FAILED one when `reservationId` is absent. */
export async function requeueReservations(db: Db, options: { reservationId?: string }): Promise<RequeuedReservation[]> {
  const rows = await db<RequeuedReservation[]>`
    select reservation_id, user_id, point_amount::float8 as point_amount, previous_attempts, last_error
    from point_requeue(${options.reservationId ?? null}::uuid)`;
  return [...rows];
}
