// One relay batch against real PostgreSQL and JetStream, scenario by scenario: publish, retry with backoff, lease
// takeover after a crash, FAILED then requeue, and a message the stream already holds.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { fromBinary } from "@bufbuild/protobuf";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { claimOutboxBatch, markOutboxPublished } from "../../src/entitlement/work/outbox/queries.ts";
import { EntitlementEventSchema } from "../../src/gen/entitlement_event_pb.ts";
import {
  failingFirst,
  insertEvent,
  makeRelay,
  manualClock,
  metricValue,
  readEvent,
  readStream,
  streamCount,
  useFixture,
} from "./outbox.helpers.ts";

// Real PostgreSQL and NATS on a loaded 2-core CI machine: waits are polled, but the whole test may take a while.
setDefaultTimeout(90_000);

const f = useFixture("relay");

describe("relay scenarios", () => {
  test("W-101: PENDING → IN_FLIGHT → PUBLISHED, and the message is in the stream with its headers and body", async () => {
    const id = await insertEvent(f.sql, { userId: "u_101", sku: "sku_a" });
    const seenDuringPublish: string[] = [];
    const relay = makeRelay(f, {
      js: {
        publish: async (...args) => {
          seenDuringPublish.push((await readEvent(f.sql, id)).status);
          return f.js.publish(...args);
        },
      },
    });
    const before = new Date();
    const report = await relay.runOnce();
    const after = new Date();

    expect(report).toEqual({ claimed: 1, published: 1, retried: 0, failed: 0, lost: 0 });
    expect(seenDuringPublish, "the row is IN_FLIGHT while it is being published").toEqual(["IN_FLIGHT"]);
    const row = await readEvent(f.sql, id);
    expect(row).toMatchObject({ status: "PUBLISHED", attempt_count: 1, locked_by: null, lease_until: null });
    expect(row.published_at?.getTime(), "published_at is the ack time").toBeGreaterThanOrEqual(before.getTime());
    expect(row.published_at?.getTime()).toBeLessThanOrEqual(after.getTime());

    const [message, ...rest] = await readStream(f.jsm, f.stream);
    expect(rest).toHaveLength(0);
    expect(message?.headers).toMatchObject({
      "Nats-Msg-Id": id,
      event_type: "EntitlementGranted",
      aggregate_key: "u_101:sku_a",
      trace_id: `trace-${id}`,
    });
    const body = fromBinary(EntitlementEventSchema, message?.data ?? new Uint8Array());
    expect(body).toMatchObject({ eventId: id, userId: "u_101", stockKeepingUnit: "sku_a", traceId: `trace-${id}` });
    expect(message?.headers.occurred_at).toBe(body.occurredAt);

    expect(await metricValue(relay.registry, "entitlement_outbox_publish_total", { result: "published" })).toBe(1);
    expect(await metricValue(relay.registry, "entitlement_outbox_publish_delay_seconds")).toBe(1);
    expect(await metricValue(relay.registry, "entitlement_outbox_backlog_age_seconds")).toBe(1);
  });

  test("W-102: a failed publish goes back to PENDING with backoff, and the retry after it publishes", async () => {
    const clock = manualClock();
    const js = failingFirst(f.js, 1, () => new Error("nats api error"));
    const relay = makeRelay(f, { js, now: clock.now });
    const id = await insertEvent(f.sql, { createdAt: clock.now() });

    expect(await relay.runOnce()).toMatchObject({ claimed: 1, retried: 1 });
    const retry = await readEvent(f.sql, id);
    expect(retry).toMatchObject({ status: "PENDING", attempt_count: 1, last_error: "nats api error", locked_by: null });
    const delay = (retry.next_retry_at?.getTime() ?? 0) - clock.now().getTime();
    expect(delay, "first backoff is 1–1.5 s").toBeGreaterThanOrEqual(1000);
    expect(delay).toBeLessThanOrEqual(1500);

    expect((await relay.runOnce()).claimed, "not due before its retry time").toBe(0);
    clock.advance(1500);
    expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
    expect(await readEvent(f.sql, id)).toMatchObject({ status: "PUBLISHED", attempt_count: 2, last_error: null });
    expect(await streamCount(f.jsm, f.stream)).toBe(1);
    expect(await metricValue(relay.registry, "entitlement_outbox_publish_total", { result: "retry_scheduled" })).toBe(
      1,
    );
  });

  test("W-103: a relay that claimed and died loses nothing: after the lease another relay publishes", async () => {
    const clock = manualClock();
    const id = await insertEvent(f.sql, { createdAt: clock.now() });
    const dead = await claimOutboxBatch(f.sql, {
      now: clock.now(),
      leaseUntil: new Date(clock.now().getTime() + 30_000),
      lockedBy: "dead-relay",
      limit: 10,
      maxAttempts: 10,
    });
    expect(dead).toHaveLength(1);
    const relay = makeRelay(f, { now: clock.now });
    expect((await relay.runOnce()).claimed, "the lease still protects the dead relay's claim").toBe(0);
    clock.advance(30_000);
    expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
    expect(await readEvent(f.sql, id)).toMatchObject({ status: "PUBLISHED", attempt_count: 2, locked_by: null });
    const late = await markOutboxPublished(f.sql, {
      lockedBy: "dead-relay",
      published: [{ eventId: id, publishedAt: clock.now() }],
    });
    expect(late, "the relay that lost its lease changes nothing").toEqual([]);
    expect(await streamCount(f.jsm, f.stream)).toBe(1);
  });

  test("W-104: max attempts end FAILED with the error; a manual requeue then publishes", async () => {
    const clock = manualClock();
    const js = failingFirst(f.js, 3, () => new Error("503 no responders"));
    const relay = makeRelay(f, { js, now: clock.now, settings: { maxAttempts: 3 } });
    const id = await insertEvent(f.sql, { createdAt: clock.now() });
    for (let i = 0; i < 3; i++) {
      expect((await relay.runOnce()).claimed).toBe(1);
      clock.advance(120_000);
    }
    expect(js.calls, "exactly max attempts publishes").toBe(3);
    expect(await readEvent(f.sql, id)).toMatchObject({
      status: "FAILED",
      attempt_count: 3,
      next_retry_at: null,
      last_error: "503 no responders",
      locked_by: null,
    });
    expect((await relay.runOnce()).claimed, "FAILED is never retried by itself").toBe(0);
    expect(await metricValue(relay.registry, "entitlement_outbox_failed_current")).toBe(1);

    await f.sql`
      update outbox_events set status = 'PENDING', attempt_count = 0, next_retry_at = null, last_error = null
      where event_id = ${id} and status = 'FAILED'`;
    expect(await relay.runOnce()).toMatchObject({ published: 1 });
    expect(await readEvent(f.sql, id)).toMatchObject({ status: "PUBLISHED", attempt_count: 1 });
    expect(await metricValue(relay.registry, "entitlement_outbox_failed_current")).toBe(0);
  });

  test("W-105: an event the stream already holds (same Nats-Msg-Id) counts as published and is stored once", async () => {
    const id = await insertEvent(f.sql);
    const h = natsHeaders();
    h.set("event_type", "EntitlementGranted");
    const first = await f.js.publish(f.subject, new Uint8Array([1]), { msgID: id, headers: h });
    expect(first.duplicate).toBe(false);
    const relay = makeRelay(f);
    expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1, retried: 0 });
    expect((await readEvent(f.sql, id)).status).toBe("PUBLISHED");
    expect(await streamCount(f.jsm, f.stream), "the duplicate window dropped the second copy").toBe(1);
  });
});
