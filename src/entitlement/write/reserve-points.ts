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
    [
      ["p_reservation_id", "uuid", r.reservationId],
      ["p_user_id", "text", r.userId],
      ["p_point_amount", "bigint", r.pointAmount],
      ["p_execute_at", "timestamptz", r.executeAt],
      ["p_reason", "text", r.reason],
      ["p_now", "timestamptz", r.now],
      ["p_trace_id", "text", r.traceId],
    ],
    r.idempotency,
  );
