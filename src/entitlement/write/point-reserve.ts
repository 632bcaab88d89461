// A reservation: one call of `point_reserve` (db/entitlement/functions/), its own transaction: the key's lock and live
// record, the PENDING reservation with its RESERVE audit row, and the reply remembered under the key.
import type { Db } from "../../shared/db.ts";
import {
  type CommandOutcome,
  type IdempotencyArgs,
  idempotencyParams,
  OUTCOME_COLUMNS,
  type StoredReply,
} from "./idempotency-params.ts";

export type Reservation = {
  reservationId: string;
  userId: string;
  pointAmount: number;
  executeAt: Date;
  reason: string | null;
  now: Date;
  traceId: string;
  idempotency: IdempotencyArgs;
  /** The reply of the reservation, stored as it is. */
  applied: StoredReply;
  /** The reply when the balance would pass 2^53 - 1; `{balance}` in its message stands for the user's balance. */
  refused: StoredReply;
};

export async function reservePoints(db: Db, r: Reservation): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from point_reserve(
      p_reservation_id => ${r.reservationId}::uuid,
      p_user_id => ${r.userId}::text,
      p_point_amount => ${r.pointAmount}::bigint,
      p_execute_at => ${r.executeAt}::timestamptz,
      p_reason => ${r.reason}::text,
      p_now => ${r.now}::timestamptz,
      p_trace_id => ${r.traceId}::text,
      p_applied => ${db.json(r.applied)}::jsonb,
      p_refused => ${db.json(r.refused)}::jsonb,
      ${idempotencyParams(db, r.idempotency)})`;
  if (!row) throw new Error("point_reserve returned no row");
  return row;
}
