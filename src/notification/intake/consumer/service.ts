// Turns a batch of valid events into notifications in one statement, exactly once per event id: an event counts as
// processed exactly when all its notifications exist.
import type { Sql } from "../../../shared/db.ts";
import type { StoredEvent } from "./handler.ts";
import { storeProcessedEvents } from "./queries.ts";

/** `created` and `duplicates` count events; `notifications` counts the rows the created events yielded. */
export type StoreOutcome = { created: number; duplicates: number; notifications: number };

/** The same event may appear twice in one batch (a re-publish without Nats-Msg-Id): keep its first copy. */
function firstOfEach(events: StoredEvent[]): StoredEvent[] {
  const seen = new Set<string>();
  return events.filter((e) => !seen.has(e.eventId) && seen.add(e.eventId));
}

export async function storeEvents(sql: Sql, events: StoredEvent[], now: Date): Promise<StoreOutcome> {
  const { created, notifications } = await storeProcessedEvents(sql, { events: firstOfEach(events), now });
  return { created, duplicates: events.length - created, notifications };
}
