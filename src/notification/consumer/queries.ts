// SQL of the event consumer. Run both inside one transaction: an event counts as processed exactly when its
// notification exists.
import type { Db } from "../../shared/db.ts";
import type { EventRecord } from "./decode.ts";

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

/** One PENDING notification per record, due at once. */
export async function insertNotifications(db: Db, input: { records: EventRecord[]; now: Date }): Promise<number> {
  if (input.records.length === 0) return 0;
  const { records, now } = input;
  const result = await db`
    insert into notifications
      (notification_id, event_id, user_id, type, occurred_at, payload_json, status, attempt_count, next_retry_at,
       created_at, traceparent)
    select gen_random_uuid(), e.event_id, e.user_id, e.type, e.occurred_at::timestamptz, e.payload::jsonb, 'PENDING', 0,
           ${now}, ${now}, e.traceparent
    from unnest(
      ${records.map((r) => r.eventId)}::uuid[],
      ${records.map((r) => r.userId)}::text[],
      ${records.map((r) => r.type)}::text[],
      ${records.map((r) => r.occurredAt)}::text[],
      ${records.map((r) => JSON.stringify(r.payload))}::text[],
      ${records.map((r) => r.traceparent ?? null)}::text[]
    ) with ordinality as e(event_id, user_id, type, occurred_at, payload, traceparent, ord)
    order by e.ord`;
  return result.count;
}
