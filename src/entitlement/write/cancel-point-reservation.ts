// A cancel: one call of `cancel_point_reservation` (db/entitlement/functions/), its own transaction: the key's lock and
// live record, a PENDING reservation CANCELLED with its CANCEL audit row, and the facts of the answer remembered under
// the key.
import type { Db } from "../../shared/db.ts";
import { type CommandOutcome, type IdempotencyArgs, idempotencyParams, OUTCOME_COLUMNS } from "./idempotency-params.ts";

export type Cancellation = {
  reservationId: string;
  now: Date;
  traceId: string;
  idempotency: IdempotencyArgs;
};

/**
 * The facts: the cancelled reservation's fields, or the status of one that is not PENDING. Besides the stored
 * outcomes, `not_found`: no such reservation, nothing remembered.
 */
export async function cancelPointReservation(db: Db, c: Cancellation): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from cancel_point_reservation(
      p_reservation_id => ${c.reservationId}::uuid,
      p_now => ${c.now}::timestamptz,
      p_trace_id => ${c.traceId}::text,
      ${idempotencyParams(db, c.idempotency)})`;
  if (!row) throw new Error("cancel_point_reservation returned no row");
  return row;
}
