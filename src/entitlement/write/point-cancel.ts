// A cancel: one call of `point_cancel` (db/entitlement/functions/), its own transaction: the key's lock and live
// record, a PENDING reservation CANCELLED with its CANCEL audit row, and the reply remembered under the key.
import type { Db } from "../../shared/db.ts";
import {
  type CommandOutcome,
  type IdempotencyArgs,
  idempotencyParams,
  OUTCOME_COLUMNS,
  type StoredReply,
} from "./idempotency-params.ts";

export type Cancellation = {
  reservationId: string;
  now: Date;
  traceId: string;
  idempotency: IdempotencyArgs;
  /** The reply of the cancel; the function adds the reservation's user_id, point_amount, execute_at, reason, created_at. */
  applied: StoredReply;
  /** The reply when the reservation is not PENDING; `{status}` in its message stands for its status. */
  refused: StoredReply;
};

/** Besides the stored outcomes, `not_found`: no such reservation, nothing remembered. */
export async function cancelPointReservation(db: Db, c: Cancellation): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from point_cancel(
      p_reservation_id => ${c.reservationId}::uuid,
      p_now => ${c.now}::timestamptz,
      p_trace_id => ${c.traceId}::text,
      p_applied => ${db.json(c.applied)}::jsonb,
      p_refused => ${db.json(c.refused)}::jsonb,
      ${idempotencyParams(db, c.idempotency)})`;
  if (!row) throw new Error("point_cancel returned no row");
  return row;
}
