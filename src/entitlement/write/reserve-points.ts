// A reservation: one call of `reserve_points` (db/entitlement/functions/), its own transaction: the key's lock and live
// record, the PENDING reservation with its RESERVE audit row, and the facts of the answer remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type CommandOutcome, type IdempotencyArgs, idempotencyParams, OUTCOME_COLUMNS } from "./idempotency-params.ts";

export type Reservation = {
  reservationId: string;
  userId: string;
  pointAmount: number;
  executeAt: Date;
  reason: string | null;
  now: Date;
  traceId: string;
  idempotency: IdempotencyArgs;
};

/** The facts: the reservation's fields, or, when the balance would pass 2^53 - 1, the balance (as text). */
export async function reservePoints(db: Db, r: Reservation): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from reserve_points(
      p_reservation_id => ${r.reservationId}::uuid,
      p_user_id => ${r.userId}::text,
      p_point_amount => ${r.pointAmount}::bigint,
      p_execute_at => ${r.executeAt}::timestamptz,
      p_reason => ${r.reason}::text,
      p_now => ${r.now}::timestamptz,
      p_trace_id => ${r.traceId}::text,
      ${idempotencyParams(db, r.idempotency)})`;
  if (!row) throw new Error("reserve_points returned no row");
  return row;
}
