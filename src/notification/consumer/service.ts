// Turns a batch of valid events into notifications in one transaction, exactly once per event id.
import type { Sql } from "../../shared/db.ts";
import type { EventRecord } from "./decode.ts";
import { insertNotifications, insertProcessedEvents } from "./queries.ts";

export type StoreOutcome = { created: number; duplicates: number };

/** The same event may appear twice in one batch (a re-publish without Nats-Msg-Id): keep its first copy. */
function firstOfEach(records: EventRecord[]): EventRecord[] {
  const seen = new Set<string>();
  return records.filter((r) => !seen.has(r.eventId) && seen.add(r.eventId));
}

export async function storeEvents(sql: Sql, records: EventRecord[], now: Date): Promise<StoreOutcome> {
  const unique = firstOfEach(records);
  const created = await sql.begin(async (tx) => {
    const fresh = await insertProcessedEvents(tx, { eventIds: unique.map((r) => r.eventId), now });
    return insertNotifications(tx, { records: unique.filter((r) => fresh.has(r.eventId)), now });
  });
  return { created, duplicates: records.length - created };
}
