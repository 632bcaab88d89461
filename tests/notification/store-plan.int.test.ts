// The consumer's storing statement keeps a plan that finds existing rows by key, however empty `notifications` was
// when the connection first stored a batch: a plan made then and kept while the table grows must not read the whole
// table at every batch (the check that a row exists already, for its player's seq to stay gap-free).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { StoredEvent } from "../../src/notification/intake/consumer/handler.ts";
import { storeProcessedEvents } from "../../src/notification/intake/consumer/queries.ts";
import { createSql } from "../../src/shared/db.ts";
import { useTestDatabase } from "../support/infra.ts";

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
    // One connection, so every batch below runs through the same prepared statements and cached plans.
    const one = createSql({ url: f.db.url, schema: "notification", max: 1, applicationName: "test-store-plan" });
    try {
      // More than the five custom plans after which PostgreSQL may keep a generic one, all on an empty table.
      for (let i = 0; i < 8; i++) await storeProcessedEvents(one, { events: events(2), now: new Date() });
      await f.sql`
        insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                                   attempt_count, next_retry_at, created_at, seq)
        select gen_random_uuid(), gen_random_uuid(), 'bulk-' || i, 'EntitlementGranted', now(),
               '{"stock_keeping_unit":"a-long-enough-sku-for-real-rows"}', 'SENT', 1, null, now(), 1
        from generate_series(1, ${ROWS}) as i`;
      const [table] = await f.sql<{ pages: number }[]>`
        select (pg_relation_size('notifications') / current_setting('block_size')::int)::int as pages`;
      expect(table?.pages, "the table the plan was not made for").toBeGreaterThan(200);

      const scans = await one.begin(async (tx) => {
        const stored = await storeProcessedEvents(tx, { events: events(2), now: new Date() });
        expect(stored).toEqual({ created: 2, notifications: 2 });
        const [row] = await tx<{ seq: number; read: number }[]>`
          select pg_stat_get_xact_numscans('notifications'::regclass)::int as seq,
                 pg_stat_get_xact_tuples_returned('notifications'::regclass)::int as read`;
        return row;
      });
      // Sequential scans of notifications in the batch's transaction, and the rows they read: none, where the plan
      // made on the empty table scanned all 20,000 rows to look for two.
      expect(scans).toEqual({ seq: 0, read: 0 });
    } finally {
      await one.end();
    }
  });
});
