// Turns a batch of valid events into notifications in one transaction, exactly once per event id: an event counts as
// processed exactly when all its notifications exist.
import type { Sql } from "../../shared/db.ts";
import type { StoredEvent } from "./handler.ts";
import { insertNotifications, insertProcessedEvents } from "./queries.ts";

/** `created` and `duplicates` count events; `notifications` counts the rows the created events yielded. */
export type StoreOutcome = { created: number; duplicates: number; notifications: number };

/** The same event may appear twice in one batch (a re-publish without Nats-Msg-Id): keep its first copy. */
function firstOfEach(events: StoredEvent[]): StoredEvent[] {
  const seen = new Set<string>();
  return events.filter((e) => !seen.has(e.eventId) && seen.add(e.eventId));
}

export async function storeEvents(sql: Sql, events: StoredEvent[], now: Date): Promise<StoreOutcome> {
  const unique = firstOfEach(events);
  return sql.begin(async (tx) => {
    const fresh = await insertProcessedEvents(tx, { eventIds: unique.map((e) => e.eventId), now });
    const notifications = await insertNotifications(tx, {
      events: unique.filter((e) => fresh.has(e.eventId)),
      now,
    });
    return { created: fresh.size, duplicates: events.length - fresh.size, notifications };
  });
}
