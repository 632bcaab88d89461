// SQL of the event consumer: one statement per batch, so it is its own transaction: an event counts as processed
// exactly when its notifications exist.
import type { Db } from "../../../shared/db.ts";
import type { StoredEvent } from "./handler.ts";
import { rowSeq, seqCounters } from "./seqs.ts";

/** `created` counts the events that were new, `notifications` the rows they yielded. */
export type StoredCounts = { created: number; notifications: number };

/**
 * Marks the events processed and inserts, for those that were new only, every notification they yield, PENDING and due
 * at once; duplicates are skipped, never an error (decisions.md). One statement instead of `begin`, two inserts and
 * `commit`: one round trip per batch, and the data-modifying CTE makes it as atomic as the transaction was. One per
 * (event, user) is also the database's rule (notifications_event_user_key), so a second copy is skipped even if
 * processed_events forgot the event.
 *
 * Each row takes the next seq of its user here, not in the per-row trigger (db/notification/010): the rows that will
 * be stored are chosen first (a row that exists already is left out before it is numbered, so skipping it leaves no
 * gap), then numbered as every storing statement numbers them (seqs.ts), in the batch's order.
 */
export async function storeProcessedEvents(db: Db, input: { events: StoredEvent[]; now: Date }): Promise<StoredCounts> {
  if (input.events.length === 0) return { created: 0, notifications: 0 };
  const rows = input.events.flatMap((e) =>
    e.notifications.map((n) => ({ eventId: e.eventId, traceparent: e.traceparent, ...n })),
  );
  const { now } = input;
  const [counts] = await db<StoredCounts[]>`
    with fresh as (
      insert into processed_events (event_id, processed_at)
      select id, ${now} from unnest(${input.events.map((e) => e.eventId)}::uuid[]) as t(id)
      on conflict do nothing
      returning event_id
    ), todo as materialized (
      select e.*
      from unnest(
        ${rows.map((r) => r.eventId)}::uuid[],
        ${rows.map((r) => r.userId)}::text[],
        ${rows.map((r) => r.type)}::text[],
        ${rows.map((r) => r.occurredAt)}::text[],
        ${rows.map((r) => JSON.stringify(r.payload))}::text[],
        ${rows.map((r) => r.traceparent ?? null)}::text[]
      ) with ordinality as e(event_id, user_id, type, occurred_at, payload, traceparent, ord)
      where e.event_id in (select event_id from fresh)
        and not exists (select from notifications n where n.event_id = e.event_id and n.user_id = e.user_id)
    ), ${seqCounters(db)}, created as (
      insert into notifications
        (notification_id, event_id, user_id, type, occurred_at, payload_json, status, attempt_count, next_retry_at,
         created_at, traceparent, seq)
      select gen_random_uuid(), t.event_id, t.user_id, t.type, t.occurred_at::timestamptz, t.payload::jsonb, 'PENDING',
             0, ${now}, ${now}, t.traceparent,
             ${rowSeq(db)}
      from todo t join counters c using (user_id)
      window mine as (partition by t.user_id)
      order by t.user_id, t.ord
      on conflict (event_id, user_id) do nothing
      returning 1
    )
    select (select count(*) from fresh)::int as created, (select count(*) from created)::int as notifications`;
  return counts ?? { created: 0, notifications: 0 };
}
