// The consumer hands what it stores to this process's delivery worker: stored leased to it (PROCESSING, its first
// attempt counted) when it has a free slot for each, then sent without a claim; stored PENDING otherwise. A worker that
// dies after the store leaves the rows leased, and another claims them when the lease ends. Real PostgreSQL.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { JsMsg } from "@nats-io/jetstream";
import { createBatchHandler } from "../../src/notification/intake/consumer/batch.ts";
import { storeProcessedEvents } from "../../src/notification/intake/consumer/queries.ts";
import { entitlementEvents } from "../../src/notification/intake/handlers/entitlement.ts";
import { claimNotifications } from "../../src/notification/work/delivery/queries.ts";
import { createDeliveryWorker } from "../../src/notification/work/delivery/worker.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { countingSql } from "../support/counting-sql.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { deliveryDeps, eventBytes, testMetrics } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_handoff", { service: "notification", resetEach: true });

const message = (data: Uint8Array, seq: number) =>
  ({
    data,
    seq,
    info: { pending: 0 },
    ack: () => {},
    nak: () => {},
    term: () => {},
    working: () => {},
  }) as unknown as JsMsg;

type Row = { status: string; attempt_count: number; locked_by: string | null; user_id: string };
const rows = async (): Promise<Row[]> => [
  ...(await f.sql<Row[]>`select status, attempt_count, locked_by, user_id from notifications order by user_id`),
];

const event = (userId: string) => ({
  eventId: crypto.randomUUID(),
  notifications: [
    { userId, type: "EntitlementGranted" as const, occurredAt: new Date().toISOString(), payload: { user_id: userId } },
  ],
});

describe("the consumer's handoff to its delivery worker", () => {
  test("stored with a lease, the notifications are PROCESSING, leased to the worker, their first attempt counted", async () => {
    const now = new Date();
    const lease = { lockedBy: "worker-a", leaseUntil: new Date(now.getTime() + 30_000) };
    const stored = await storeProcessedEvents(f.sql, { events: [event("u-1"), event("u-2")], now, lease });
    expect(stored.notifications).toBe(2);
    expect(stored.leased.map((r) => r.userId).sort()).toEqual(["u-1", "u-2"]);
    const [ids] = await f.sql<{ ids: string[] }[]>`select array_agg(notification_id::text) as ids from notifications`;
    expect(new Set(stored.leased.map((r) => r.notificationId))).toEqual(new Set(ids?.ids));
    expect(await rows()).toEqual([
      { status: "PROCESSING", attempt_count: 1, locked_by: "worker-a", user_id: "u-1" },
      { status: "PROCESSING", attempt_count: 1, locked_by: "worker-a", user_id: "u-2" },
    ]);
    const withoutLease = await storeProcessedEvents(f.sql, { events: [event("u-3")], now });
    expect(withoutLease.leased, "without a lease nothing is leased").toEqual([]);
    expect((await rows()).at(-1)).toEqual({ status: "PENDING", attempt_count: 0, locked_by: null, user_id: "u-3" });
  });

  test("the release before's storing call stores them PENDING, as it did", async () => {
    const e = event("u-old");
    const [row] = await f.sql<{ created: number; notifications: number }[]>`
      select stored_events as created, stored_notifications as notifications
      from store_notifications(
        p_now => now(), p_event_ids => ${[e.eventId]}::uuid[], p_row_event_ids => ${[e.eventId]}::uuid[],
        p_user_ids => ${["u-old"]}::text[], p_types => ${["EntitlementGranted"]}::text[],
        p_occurred_at => ${[new Date().toISOString()]}::text[], p_payloads => ${["{}"]}::text[],
        p_traceparents => ${[null]}::text[])`;
    expect(row).toEqual({ created: 1, notifications: 1 });
    expect(await rows()).toEqual([{ status: "PENDING", attempt_count: 0, locked_by: null, user_id: "u-old" }]);
  });

  test("the worker sends what the consumer hands it without claiming: a SENT mark is its only statement", async () => {
    const { sql: counting, statements, reset } = countingSql(f.sql);
    const d = deliveryDeps(counting, new Date(), { now: () => new Date() });
    const worker = createDeliveryWorker({ ...d, waker: new Waker(), pollIntervalMs: 600_000, sentLingerMs: 300 });
    const wakes: boolean[] = [];
    const handle = createBatchHandler({
      handler: entitlementEvents,
      sql: f.sql,
      log: silentLogger,
      now: () => new Date(),
      metrics: testMetrics().metrics,
      handoff: worker,
      onCreated: (handedOff) => void wakes.push(handedOff === true),
    });
    const stop = new AbortController();
    const running = worker.run(stop.signal);
    try {
      await Bun.sleep(100); // the loop's first, empty rounds
      reset();
      for (let i = 0; i < 20; i++) await handle([message(eventBytes({ userId: `u-${i}` }), i + 1)]);
      await waitUntil(async () => (d.sent.length === 20 ? true : undefined), "all twenty sent");
    } finally {
      stop.abort();
      await running;
    }
    expect(wakes, "every batch went to the worker, so none woke it to claim").toEqual(Array(20).fill(true));
    expect((await rows()).every((r) => r.status === "SENT" && r.attempt_count === 1)).toBe(true);
    // A claim for each would be twenty statements more; the marks share a few.
    expect(statements(), "the worker's statements for twenty notifications").toBeLessThan(5);
  });

  test("a lease only while the worker has a free slot for every notification, and none once it stopped", async () => {
    const d = deliveryDeps(f.sql, new Date(), { now: () => new Date(), batchSize: 1 });
    const worker = createDeliveryWorker({ ...d, waker: new Waker(), pollIntervalMs: 600_000 });
    const stop = new AbortController();
    const running = worker.run(stop.signal);
    try {
      await Bun.sleep(50);
      expect(worker.lease(2), "two notifications, one slot").toBeUndefined();
      expect(worker.lease(1)?.lockedBy).toBe(d.workerId);
    } finally {
      stop.abort();
      await running;
    }
    expect(worker.lease(1), "a stopped worker takes nothing").toBeUndefined();
  });

  test("rows leased to a worker that died are claimed by another when the lease ends, and sent once", async () => {
    const now = new Date();
    const lease = { lockedBy: "a-dead-worker", leaseUntil: new Date(now.getTime() + 200) };
    const stored = await storeProcessedEvents(f.sql, { events: [event("u-d")], now, lease });
    expect(stored.leased).toHaveLength(1);
    const claim = (at: Date) =>
      claimNotifications(f.sql, { limit: 10, now: at, leaseUntil: new Date(at.getTime() + 30_000), lockedBy: "b" });
    expect(await claim(new Date(now.getTime() + 100)), "not before the lease ends").toEqual([]);
    const [taken, ...rest] = await claim(new Date(now.getTime() + 300));
    expect(rest).toEqual([]);
    expect(taken).toMatchObject({ notificationId: stored.leased[0]?.notificationId, attemptCount: 2 });
  });
});
