// A reservation: one call of `reserve_points` (db/entitlement/functions/), its own transaction: the key's lock and live
// record, the PENDING reservation with its RESERVE audit row, and the facts of the answer remembered under the key.
import type { Db } from "../../shared/db.ts";
import type { PointCommand } from "./cancel-point-reservation.ts";
import { type CommandOutcome, callCommand } from "./idempotency-params.ts";

export type Reservation = PointCommand & {
  userId: string;
  pointAmount: number;
  executeAt: Date;
  reason: string | null;
};

/** The facts: the reservation's fields, or, when the balance would pass 2^53 - 1, the balance (as text). */
export const reservePoints = (db: Db, r: Reservation): Promise<CommandOutcome> =>
  callCommand(
    db,
    "reserve_points",
    db`
      p_reservation_id => ${r.reservationId}::uuid,
      p_user_id => ${r.userId}::text,
      p_point_amount => ${r.pointAmount}::bigint,
      p_execute_at => ${r.executeAt}::timestamptz,
      p_reason => ${r.reason}::text,
      p_now => ${r.now}::timestamptz,
      p_trace_id => ${r.traceId}::text`,
    r.idempotency,
  );
