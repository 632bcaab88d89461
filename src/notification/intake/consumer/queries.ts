// SQL of the event consumer: one statement per batch, so it is its own transaction: an event counts as processed
// exactly when its notifications exist.
import type { Db } from "../../../shared/db.ts";
import type { StoredEvent } from "./handler.ts";

/** `created` counts the events that were new, `notifications` the rows they yielded. */
export type StoredCounts = { created: number; notifications: number };

/** The delivery worker the notifications are stored leased to (store_notifications_leased). */
export type Lease = { lockedBy: string; leaseUntil: Date };

/** A notification stored leased: its id, its event and its player. */
export type LeasedRow = { notificationId: string; eventId: string; userId: string };

type StoredRow = StoredCounts & {
  leasedIds: string[] | null;
  leasedEventIds: string[] | null;
  leasedUserIds: string[] | null;
};

/**
 * Marks the events processed and inserts, for those that were new only, every notification they yield, numbered per
 * player: PENDING and due at once, or, with a `lease`, PROCESSING and leased to that worker (returned as `leased`). One
 * call of `store_notifications_leased` (db/notification/functions/), one statement and so its own transaction, one
 * round trip per batch. Duplicates are skipped, never an error (decisions.md). One per (event, user) is also the
 * database's rule (notifications_event_user_key), so a second copy is skipped even if processed_events forgot the event.
 */
export async function storeProcessedEvents(
  db: Db,
  input: { events: StoredEvent[]; now: Date; lease?: Lease },
): Promise<StoredCounts & { leased: LeasedRow[] }> {
  if (input.events.length === 0) return { created: 0, notifications: 0, leased: [] };
  const rows = input.events.flatMap((e) =>
    e.notifications.map((n) => ({ eventId: e.eventId, traceparent: e.traceparent, ...n })),
  );
  const [row] = await db<StoredRow[]>`
    select stored_events as created, stored_notifications as notifications, leased_ids as "leasedIds",
           leased_event_ids as "leasedEventIds", leased_user_ids as "leasedUserIds"
    from store_notifications_leased(
      p_now => ${input.now}::timestamptz,
      p_event_ids => ${input.events.map((e) => e.eventId)}::uuid[],
      p_row_event_ids => ${rows.map((r) => r.eventId)}::uuid[],
      p_user_ids => ${rows.map((r) => r.userId)}::text[],
      p_types => ${rows.map((r) => r.type)}::text[],
      p_occurred_at => ${rows.map((r) => r.occurredAt)}::text[],
      p_payloads => ${rows.map((r) => JSON.stringify(r.payload))}::text[],
      p_traceparents => ${rows.map((r) => r.traceparent ?? null)}::text[],
      p_locked_by => ${input.lease?.lockedBy ?? null}::text,
      p_lease_until => ${input.lease?.leaseUntil ?? null}::timestamptz)`;
  if (!row) return { created: 0, notifications: 0, leased: [] };
  const leased = (row.leasedIds ?? []).map((notificationId, i) => ({
    notificationId,
    eventId: row.leasedEventIds?.[i] as string,
    userId: row.leasedUserIds?.[i] as string,
  }));
  return { created: row.created, notifications: row.notifications, leased };
}
