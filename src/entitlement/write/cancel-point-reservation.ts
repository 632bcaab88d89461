// A cancel: one call of `cancel_point_reservation` (db/entitlement/functions/), its own transaction: the key's lock and
// live record, a PENDING reservation CANCELLED with its CANCEL audit row, and the facts of the answer remembered under
// the key.
import type { Db } from "../../shared/db.ts";
import { type CommandOutcome, callCommand, type IdempotencyArgs } from "./idempotency-params.ts";

/** What every points command brings: the reservation, when, the trace and the key. */
export type PointCommand = {
  reservationId: string;
  now: Date;
  traceId: string;
  idempotency: IdempotencyArgs;
};

export type Cancellation = PointCommand;

/**
 * The facts: the cancelled reservation's fields, or the status of one that is not PENDING. Besides the stored
 * outcomes, `not_found`: no such reservation, nothing remembered.
 */
export const cancelPointReservation = (db: Db, c: Cancellation): Promise<CommandOutcome> =>
  callCommand(
    db,
    "cancel_point_reservation",
    [
      ["p_reservation_id", "uuid", c.reservationId],
      ["p_now", "timestamptz", c.now],
      ["p_trace_id", "text", c.traceId],
    ],
    c.idempotency,
  );
