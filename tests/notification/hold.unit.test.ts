// A database outage must not push events toward max_deliver: the batch is held in progress and stored once the
// database answers; only failures that are not an outage are nak-ed.
import { describe, expect, test } from "bun:test";
import type { JsMsg } from "@nats-io/jetstream";
import { createAdvisoryHandler } from "../../src/notification/intake/advisories/handler.ts";
import { createBatchHandler, type StoreOutcome } from "../../src/notification/intake/consumer/batch.ts";
import type { EventHandler, StoredEvent } from "../../src/notification/intake/consumer/handler.ts";
import { entitlementEvents } from "../../src/notification/intake/handlers/entitlement.ts";
import { matchmakingEvents } from "../../src/notification/intake/handlers/matchmaking.ts";
import { pointsEvents } from "../../src/notification/intake/handlers/points.ts";
import { createNotificationMetrics } from "../../src/notification/metrics.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { eventBytes, matchBytes, pointsBytes } from "./helpers.ts";

type Calls = { ack: number; nak: (number | undefined)[]; term: number; working: number };

function fakeMessage(data: Uint8Array, seq = 1): { message: JsMsg; calls: Calls } {
  const calls: Calls = { ack: 0, nak: [], term: 0, working: 0 };
  const message = {
    data,
    seq,
    info: { pending: 0 },
    ack: () => calls.ack++,
    nak: (delay?: number) => calls.nak.push(delay),
    term: () => calls.term++,
    working: () => calls.working++,
  } as unknown as JsMsg;
  return { message, calls };
}

const outage = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
const checkViolation = () => Object.assign(new Error("new row violates check constraint"), { code: "23514" });
const undefinedTable = () => Object.assign(new Error('relation "notifications" does not exist'), { code: "42P01" });

function handlerWith(
  store: (sql: Sql, events: StoredEvent[]) => Promise<StoreOutcome>,
  handler: EventHandler = entitlementEvents,
) {
  return createBatchHandler({
    handler,
    sql: {} as Sql,
    log: silentLogger,
    now: () => new Date(),
    metrics: createNotificationMetrics(createRegistry("test")),
    onCreated: () => {},
    store,
    holdRetryMs: 5,
    nakDelayMs: () => 1_500,
  });
}

const POISON = "refused-by-a-constraint";

describe("entitlement events while the database is down", () => {
  test("the batch is held in progress (no nak) and acked once the database answers", async () => {
    let tries = 0;
    const handle = handlerWith(async () => {
      tries++;
      if (tries <= 3) throw outage();
      return { created: 2, duplicates: 0, notifications: 2 };
    });
    const a = fakeMessage(eventBytes(), 1);
    const b = fakeMessage(eventBytes(), 2);
    await handle([a.message, b.message]);
    for (const { calls } of [a, b]) {
      expect(calls.nak, "an outage never counts as a failed delivery").toEqual([]);
      expect(calls.working, "ack_wait is restarted while waiting").toBeGreaterThanOrEqual(3);
      expect(calls.ack, "acked once stored").toBe(1);
    }
    expect(tries).toBe(4);
  });

  test("a failure that is not an outage naks the batch with a delay, toward max_deliver and its advisory", async () => {
    const handle = handlerWith(async () => {
      throw undefinedTable();
    });
    const a = fakeMessage(eventBytes());
    await handle([a.message]);
    expect(a.calls).toEqual({ ack: 0, nak: [1_500], term: 0, working: 0 });
  });

  test.each([
    ["entitlement", entitlementEvents, () => eventBytes({ userId: POISON }), () => eventBytes()],
    ["matchmaking", matchmakingEvents, () => matchBytes({ userIds: ["p-1", POISON] }), () => matchBytes()],
    ["points", pointsEvents, () => pointsBytes({ userId: POISON }), () => pointsBytes()],
  ] as const)(
    "%s: a failure caused by one event's data terminates that event only; the others are stored",
    async (_, handler, poisonBytes, okBytes) => {
      const stored: string[] = [];
      const handle = handlerWith(async (_sql, events) => {
        const users = events.flatMap((e) => e.notifications.map((n) => n.userId));
        if (users.includes(POISON) || events.length > 1) throw checkViolation();
        stored.push(...events.map((e) => e.eventId));
        return { created: 1, duplicates: 0, notifications: users.length };
      }, handler);
      const [a, p, b] = [fakeMessage(okBytes(), 1), fakeMessage(poisonBytes(), 2), fakeMessage(okBytes(), 3)];
      await handle([a.message, p.message, b.message]);
      expect(p.calls, "the culprit is terminated, never redelivered").toEqual({ ack: 0, nak: [], term: 1, working: 0 });
      for (const { calls } of [a, b])
        expect(calls, "the others are stored").toEqual({ ack: 1, nak: [], term: 0, working: 0 });
      expect(stored).toHaveLength(2);
    },
  );

  test("a failure that is not the data's during isolation naks only the events not yet stored", async () => {
    let calls = 0;
    const handle = handlerWith(async () => {
      calls++;
      if (calls === 1) throw checkViolation();
      if (calls === 2) return { created: 1, duplicates: 0, notifications: 1 };
      throw undefinedTable();
    });
    const [a, b] = [fakeMessage(eventBytes(), 1), fakeMessage(eventBytes(), 2)];
    await handle([a.message, b.message]);
    expect(a.calls).toEqual({ ack: 1, nak: [], term: 0, working: 0 });
    expect(b.calls, "not terminated: the data was not to blame").toEqual({ ack: 0, nak: [1_500], term: 0, working: 0 });
  });

  test("shutdown during an outage hands the batch back at once", async () => {
    const controller = new AbortController();
    const handle = handlerWith(async () => {
      controller.abort();
      throw outage();
    });
    const a = fakeMessage(eventBytes());
    await handle([a.message], controller.signal);
    expect(a.calls.ack).toBe(0);
    expect(a.calls.nak, "nak without delay, so another replica takes it now").toEqual([undefined]);
  });
});

describe("advisories while the database is down", () => {
  test("the advisory is held and recorded once the database answers", async () => {
    let tries = 0;
    const sql = (() => {
      tries++;
      if (tries <= 2) return Promise.reject(outage());
      return Promise.resolve(Object.assign([], { count: 1 }));
    }) as unknown as Sql;
    const handle = createAdvisoryHandler({
      sql,
      log: silentLogger,
      now: () => new Date(),
      metrics: createNotificationMetrics(createRegistry("test")),
      kind: "MSG_TERMINATED",
      holdRetryMs: 5,
    });
    const advisory = new TextEncoder().encode(
      JSON.stringify({ type: "io.nats.jetstream.advisory.v1.terminated", stream: "s", consumer: "c", stream_seq: 42 }),
    );
    const m = fakeMessage(advisory);
    await handle(m.message);
    expect(m.calls.nak).toEqual([]);
    expect(m.calls.working).toBeGreaterThanOrEqual(2);
    expect(m.calls.ack).toBe(1);
  });
});
