// The consumer numbers the notifications it stores in its own statement (one counter update per user and batch), while
// anything else that inserts without a seq (the previous release during a rolling upgrade, a runbook) is numbered by
// the trigger: both draw on the same counter row, so each user's seqs stay 1..n with no gap and no repeat, however
// the batches and plain inserts interleave, and however the users of concurrent batches are ordered.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { storeSentNotifications } from "../../../src/notification/features/send/queries.ts";
import type { StoredEvent } from "../../../src/notification/intake/consumer/handler.ts";
import { storeProcessedEvents } from "../../../src/notification/intake/consumer/queries.ts";
import { useTestDatabase } from "../../support/infra.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_seq_concurrency", { service: "notification" });

const USERS = ["seq-a", "seq-b", "seq-c", "seq-d"];

/** One event per user in `users` (in that order), each with one notification. */
function batch(users: string[]): StoredEvent[] {
  return users.map((userId, i) => ({
    eventId: crypto.randomUUID(),
    notifications: [
      { userId, type: "EntitlementGranted" as const, occurredAt: new Date().toISOString(), payload: { i } },
    ],
  }));
}

async function insertWithoutSeq(userId: string): Promise<void> {
  await f.sql`
    insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                               attempt_count, next_retry_at, created_at)
    values (gen_random_uuid(), gen_random_uuid(), ${userId}, 'EntitlementGranted', now(), '{}', 'PENDING', 0, now(),
            now())`;
}

/** The send API's storing statement for `users`: one notification each, as a send without a collapse_key stores. */
function sendTo(users: string[]): Promise<number> {
  const request = { type: "TournamentStarting", user_ids: users, data: null, title: null, body: null };
  return storeSentNotifications(f.sql, {
    request: { ...request, collapse_key: null, expires_at: null },
    requestId: crypto.randomUUID(),
    now: new Date(),
    traceparent: null,
  });
}

describe("seq under concurrent storing", () => {
  test("the consumer's function and the send API's statement number one player's rows as one sequence", async () => {
    // The two storing paths spell the numbering in two languages (store_notifications in SQL, seqs.ts in TypeScript).
    await storeProcessedEvents(f.sql, { events: batch(["seq-both", "seq-both"]), now: new Date() });
    expect(await sendTo(["seq-both", "seq-both-other"])).toBe(2);
    const work: Promise<unknown>[] = [];
    for (let round = 0; round < 6; round++) {
      work.push(storeProcessedEvents(f.sql, { events: batch(["seq-both"]), now: new Date() }));
      work.push(sendTo(["seq-both"]));
    }
    await Promise.all(work);
    const rows = await f.sql<{ seq: string; type: string }[]>`
      select seq::text, type from notifications n where user_id = 'seq-both' order by n.seq`;
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 15 }, (_, i) => String(i + 1)));
    expect(rows.slice(0, 3).map((r) => r.type)).toEqual([
      "EntitlementGranted",
      "EntitlementGranted",
      "TournamentStarting",
    ]);
  });

  test("a batch numbers one user's rows in the batch's order, after what the user had", async () => {
    await insertWithoutSeq("seq-order");
    const events = batch(["seq-order", "seq-other", "seq-order", "seq-order"]);
    await storeProcessedEvents(f.sql, { events, now: new Date() });
    const rows = await f.sql<{ event_id: string; seq: string }[]>`
      select event_id, seq::text from notifications where user_id = 'seq-order' order by seq`;
    expect(rows.map((r) => r.seq)).toEqual(["1", "2", "3", "4"]);
    expect(rows.slice(1).map((r) => r.event_id)).toEqual([0, 2, 3].map((i) => events[i]?.eventId ?? ""));
    const [counter] = await f.sql<{ last_seq: string }[]>`
      select last_seq::text from notification_user_seqs where user_id = 'seq-order'`;
    expect(counter?.last_seq, "the counter stands at the last number given").toBe("4");
  });

  test("concurrent batches in any user order and plain inserts: 1..n per user, no gap, no repeat", async () => {
    const work: Promise<unknown>[] = [];
    let expected = 0;
    for (let round = 0; round < 12; round++) {
      // Each batch holds every user twice, in an order of its own, so that batches lock counters they share.
      const users = [...USERS, ...USERS].sort(() => Math.random() - 0.5);
      work.push(storeProcessedEvents(f.sql, { events: batch(users), now: new Date() }));
      work.push(insertWithoutSeq(USERS[round % USERS.length] as string));
      expected += users.length + 1;
    }
    await Promise.all(work);
    const rows = await f.sql<{ user_id: string; n: number; max: string; distinct: number }[]>`
      select user_id, count(*)::int as n, max(seq)::text as max, count(distinct seq)::int as distinct
      from notifications where user_id = any(${USERS}) group by user_id order by user_id`;
    expect(rows.reduce((a, r) => a + r.n, 0)).toBe(expected);
    for (const r of rows) {
      expect(r.distinct, `${r.user_id}: no repeated seq`).toBe(r.n);
      expect(r.max, `${r.user_id}: no gap`).toBe(String(r.n));
    }
  });
});
