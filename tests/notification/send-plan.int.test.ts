// A send with a collapse_key first marks read the recipients' unread notifications with that key. Its statement keeps a
// plan that finds them by key, however empty `notifications` was when the connection first stored such a send: a plan
// made then and kept while the table grows must not read the whole table at every send. (A send without a key reads
// nothing of notifications: its conflict check is the unique index itself.)
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { storeSentNotifications } from "../../src/notification/features/send/queries.ts";
import type { Db } from "../../src/shared/db.ts";
import { useTestDatabase } from "../support/infra.ts";
import { scansOfPlanMadeOnEmptyTable } from "./plan-scans.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_send_plan", { service: "notification" });

const ROWS = 20_000;

function send(db: Db, users: string[], collapseKey: string): Promise<number> {
  const request = { type: "TournamentStarting", user_ids: users, data: null, title: null, body: null };
  return storeSentNotifications(db, {
    request: { ...request, collapse_key: collapseKey, expires_at: null },
    requestId: crypto.randomUUID(),
    now: new Date(),
    traceparent: null,
  });
}

const players = (n: number) => Array.from({ length: n }, () => `plan-${crypto.randomUUID()}`);

const collapseKey = "season-pass";

describe("the send API's supersede plan", () => {
  test("made on an empty table, the supersede still reads notifications by key at 20,000 rows", async () => {
    const scans = await scansOfPlanMadeOnEmptyTable({
      url: f.db.url,
      run: async (db) => {
        expect(await send(db, players(2), collapseKey)).toBe(2);
      },
      // Unread rows carrying the key, as a season of sends leaves them: the supersede's index holds them all.
      fill: async () => {
        await f.sql`
          insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                                     attempt_count, next_retry_at, created_at, seq, collapse_key)
          select gen_random_uuid(), gen_random_uuid(), 'bulk-' || i, 'TournamentStarting', now(),
                 '{"title":"a title long enough for real rows"}', 'SENT', 1, null, now(), 1, ${collapseKey}
          from generate_series(1, ${ROWS}) as i`;
      },
    });
    expect(scans).toEqual({ seq: 0, read: 0 });
  });
});
