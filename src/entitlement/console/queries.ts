// SQL only the console reads: a user's open point reservations and the outbox's FAILED events.
import type { Db } from "../../shared/db.ts";
import type { ReservationStatus } from "../features/points/reservation-queries.ts";

export type OpenReservation = {
  reservation_id: string;
  point_amount: number;
  execute_at: Date;
  reason: string | null;
  status: ReservationStatus;
  created_at: Date;
  last_error: string | null;
};

/** The user's reservations not yet done or cancelled (PENDING, PROCESSING, FAILED), soonest first. */
export async function listOpenReservations(
  db: Db,
  args: { userId: string; limit: number },
): Promise<OpenReservation[]> {
  return db<OpenReservation[]>`
    select reservation_id, point_amount::float8 as point_amount, execute_at, reason, status, created_at, last_error
    from point_reservations
    where user_id = ${args.userId} and status in ('PENDING', 'PROCESSING', 'FAILED')
    order by execute_at, reservation_id
    limit ${args.limit}`;
}

export type FailedEvent = {
  event_id: string;
  event_type: string;
  aggregate_key: string;
  attempt_count: number;
  last_error: string | null;
  created_at: Date;
};

/** The oldest FAILED outbox events: what waits for an operator's requeue. */
export async function listFailedOutboxEvents(db: Db, args: { limit: number }): Promise<FailedEvent[]> {
  return db<FailedEvent[]>`
    select event_id, event_type, aggregate_key, attempt_count, last_error, created_at
    from outbox_events
    where status = 'FAILED'
    order by created_at, event_id
    limit ${args.limit}`;
}
