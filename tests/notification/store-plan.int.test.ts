// The consumer's storing statement keeps a plan that finds existing rows by key, however empty `notifications` was
// when the connection first stored a batch: a plan made then and kept while the table grows must not read the whole
// table at every batch (the check that a row exists already, for its player's seq to stay gap-free).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { StoredEvent } from "../../src/notification/intake/consumer/handler.ts";
import { storeProcessedEvents } from "../../src/notification/intake/consumer/queries.ts";
import { useTestDatabase } from "../support/infra.ts";
import { scansOfPlanMadeOnEmptyTable } from "./plan-scans.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_store_plan", { service: "notification" });

const ROWS = 20_000;

function events(n: number): StoredEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    eventId: crypto.randomUUID(),
    notifications: [
      {
        userId: `plan-${crypto.randomUUID()}`,
        type: "EntitlementGranted" as const,
        occurredAt: new Date().toISOString(),
        payload: { i },
      },
    ],
  }));
}

describe("the storing statement's plan", () => {
  test("made on an empty table, it still reads notifications by key once the table holds 20,000 rows", async () => {
    const scans = await scansOfPlanMadeOnEmptyTable({
      url: f.db.url,
      run: async (db) => {
        const stored = await storeProcessedEvents(db, { events: events(2), now: new Date() });
        expect(stored).toEqual({ created: 2, notifications: 2, leased: [] });
      },
      fill: async () => {
        await f.sql`
          insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                                     attempt_count, next_retry_at, created_at, seq)
          select gen_random_uuid(), gen_random_uuid(), 'bulk-' || i, 'EntitlementGranted', now(),
                 '{"stock_keeping_unit":"a-long-enough-sku-for-real-rows"}', 'SENT', 1, null, now(), 1
          from generate_series(1, ${ROWS}) as i`;
        const [table] = await f.sql<{ pages: number }[]>`
          select (pg_relation_size('notifications') / current_setting('block_size')::int)::int as pages`;
        expect(table?.pages, "the table the plan was not made for").toBeGreaterThan(200);
      },
    });
    // None, where the plan made on the empty table scanned all 20,000 rows to look for two.
    expect(scans).toEqual({ seq: 0, read: 0 });
  });
});
