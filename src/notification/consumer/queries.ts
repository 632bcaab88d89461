// SQL of the event consumer. Run both inside one transaction: an event counts as processed exactly when its
// notification exists.
import type { Db } from "../../shared/db.ts";
import type { StoredEvent } from "./handler.ts";

/** Marks events processed; returns the ids that were new (duplicates are skipped, never an error: CONTRACT §8.1). */
export async function insertProcessedEvents(db: Db, input: { eventIds: string[]; now: Date }): Promise<Set<string>> {
  if (input.eventIds.length === 0) return new Set();
  const rows = await db<{ event_id: string }[]>`
    insert into processed_events (event_id, processed_at)
    select id, ${input.now} from unnest(${input.eventIds}::uuid[]) as t(id)
    on conflict do nothing
    returning event_id`;
  return new Set(rows.map((r) => r.event_id));
}

/**
 * Every notification of the given events, PENDING and due at once. One per (event, user) is also the database's rule
 * (notifications_event_user_key), so a second copy is skipped even if processed_events forgot the event.
 */
export async function insertNotifications(db: Db, input: { events: StoredEvent[]; now: Date }): Promise<number> {
  const rows = input.events.flatMap((e) =>
    e.notifications.map((n) => ({ eventId: e.eventId, traceparent: e.traceparent, ...n })),
  );
  if (rows.length === 0) return 0;
  const { now } = input;
  const result = await db`
    insert into notifications
      (notification_id, event_id, user_id, type, occurred_at, payload_json, status, attempt_count, next_retry_at,
       created_at, traceparent)
    select gen_random_uuid(), e.event_id, e.user_id, e.type, e.occurred_at::timestamptz, e.payload::jsonb, 'PENDING', 0,
           ${now}, ${now}, e.traceparent
    from unnest(
      ${rows.map((r) => r.eventId)}::uuid[],
      ${rows.map((r) => r.userId)}::text[],
      ${rows.map((r) => r.type)}::text[],
      ${rows.map((r) => r.occurredAt)}::text[],
      ${rows.map((r) => JSON.stringify(r.payload))}::text[],
      ${rows.map((r) => r.traceparent ?? null)}::text[]
    ) with ordinality as e(event_id, user_id, type, occurred_at, payload, traceparent, ord)
    order by e.ord
    on conflict (event_id, user_id) do nothing`;
  return result.count;
}
