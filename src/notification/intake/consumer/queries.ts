// SQL of the event consumer: one statement per batch, so it is its own transaction: an event counts as processed
// exactly when its notifications exist.
import type { Db } from "../../../shared/db.ts";
import type { StoredEvent } from "./handler.ts";

/** `created` counts the events that were new, `notifications` the rows they yielded. */
export type StoredCounts = { created: number; notifications: number };

/**
 * Marks the events processed and inserts, for those that were new only, every notification they yield, PENDING, due
 * at once and numbered per player: one call of `store_notifications` (db/notification/functions/), one statement and
 * so its own transaction, one round trip per batch. Duplicates are skipped, never an error (decisions.md). One per
 * (event, user) is also the database's rule (notifications_event_user_key), so a second copy is skipped even if
 * processed_events forgot the event.
 */
export async function storeProcessedEvents(db: Db, input: { events: StoredEvent[]; now: Date }): Promise<StoredCounts> {
  if (input.events.length === 0) return { created: 0, notifications: 0 };
  const rows = input.events.flatMap((e) =>
    e.notifications.map((n) => ({ eventId: e.eventId, traceparent: e.traceparent, ...n })),
  );
  const [counts] = await db<StoredCounts[]>`
    select stored_events as created, stored_notifications as notifications
    from store_notifications(
      p_now => ${input.now}::timestamptz,
      p_event_ids => ${input.events.map((e) => e.eventId)}::uuid[],
      p_row_event_ids => ${rows.map((r) => r.eventId)}::uuid[],
      p_user_ids => ${rows.map((r) => r.userId)}::text[],
      p_types => ${rows.map((r) => r.type)}::text[],
      p_occurred_at => ${rows.map((r) => r.occurredAt)}::text[],
      p_payloads => ${rows.map((r) => JSON.stringify(r.payload))}::text[],
      p_traceparents => ${rows.map((r) => r.traceparent ?? null)}::text[])`;
  return counts ?? { created: 0, notifications: 0 };
}
