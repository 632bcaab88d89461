// The whole service on real NATS and PostgreSQL: events published to the stream end as notifications exactly once,
// poison messages end in notification_nats_dlq, failing users end in notification_dlq.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection, headers as natsHeaders } from "@nats-io/transport-node";
import type { NotificationConfig } from "../../src/notification/config.ts";
import type { ConsumerHealth } from "../../src/notification/intake/consumer/worker.ts";
import { createWorkers } from "../../src/notification/workers.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createNatsLink } from "../../src/shared/nats.ts";
import { systemClock, Waker } from "../../src/shared/runtime.ts";
import { type DatabaseFixture, natsUrl, openTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { consumerBound, deleteStreams, eventBytes, streamsOf, testConfig, testMetrics } from "./helpers.ts";

setDefaultTimeout(90_000);

let f: DatabaseFixture;
let sql: Sql;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let config: NotificationConfig;
const health: ConsumerHealth = { bound: {} };
const stop = new AbortController();
let running: Promise<void>[] = [];

beforeAll(async () => {
  f = await openTestDatabase("notif_pipeline", { service: "notification", poolMax: 8 });
  sql = f.sql;
  nc = await connect({ servers: await natsUrl() });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  config = testConfig({
    NOTIFICATION_DELIVERY_MAX_ATTEMPTS: "3",
    NOTIFICATION_DELIVERY_FAILURE_INJECTION_ENABLED: "true",
    NOTIFICATION_DELIVERY_FAILURE_INJECTION_USER_ID_PREFIX: "e2e-dlq-",
  });
  const workers = createWorkers({
    config,
    sql,
    log: silentLogger,
    now: systemClock,
    metrics: testMetrics().metrics,
    waker: new Waker(),
    workerId: "pipeline-worker",
    link: createNatsLink(Promise.resolve(nc), silentLogger),
    health,
  });
  running = workers.map((w) => w.run(stop.signal));
  await consumerBound(health);
});

afterAll(async () => {
  stop.abort();
  await Promise.all(running);
  await deleteStreams(nc, streamsOf(config));
  await nc.close();
  await f.close();
});

async function publishEvent(bytes: Uint8Array, msgId?: string) {
  const h = natsHeaders();
  if (msgId) h.set("Nats-Msg-Id", msgId);
  return js.publish(config.nats.subject, bytes, { headers: h });
}

/** Waits until the consumer has settled everything up to `seq`, so "nothing else happened" can be asserted. */
async function consumed(seq: number): Promise<void> {
  await waitUntil(async () => {
    const info = await jsm.consumers.info(config.nats.stream, config.nats.durable);
    return info.ack_floor.stream_seq >= seq && info.num_ack_pending === 0 ? true : undefined;
  }, `the consumer to settle stream_seq ${seq}`);
}

const rowsFor = (userId: string) =>
  sql<{ status: string; attempt_count: number; event_id: string; payload: string; type: string }[]>`
    select status, attempt_count, event_id, payload_json::text as payload, type
    from notifications where user_id = ${userId}`;
const natsDlq = (seq: number) =>
  sql<{ kind: string; stream: string; consumer: string; deliveries: number | null }[]>`
    select kind, stream, consumer, deliveries::int from notification_nats_dlq
    where stream = ${config.nats.stream} and stream_seq = ${seq}`;

describe("pipeline", () => {
  test("the consumer binds with the configured ack wait, max deliver and filter", async () => {
    const info = await jsm.consumers.info(config.nats.stream, config.nats.durable);
    expect(info.config.ack_policy).toBe("explicit");
    expect(info.config.ack_wait).toBe(3_000_000_000);
    expect(info.config.max_deliver).toBe(10);
    expect(info.config.filter_subject).toBe(config.nats.subject);
    const stream = await jsm.streams.info(config.nats.stream);
    expect(stream.config.duplicate_window).toBe(120_000_000_000);
  });

  test("an event published to the stream ends as exactly one SENT notification", async () => {
    const userId = `pipe-${crypto.randomUUID()}`;
    const eventId = crypto.randomUUID();
    await publishEvent(eventBytes({ eventId, userId, stockKeepingUnit: "sku_1", sourceId: "p_1" }), eventId);
    const [row] = await waitUntil(async () => {
      const rows = await rowsFor(userId);
      return rows[0]?.status === "SENT" ? rows : undefined;
    }, "the notification to be SENT");
    expect(row).toMatchObject({ event_id: eventId, attempt_count: 1, type: "EntitlementGranted" });
    expect(JSON.parse(row?.payload ?? "{}")).toMatchObject({
      event_id: eventId,
      user_id: userId,
      event_type: "EntitlementGranted",
      stock_keeping_unit: "sku_1",
      source: "purchase",
      source_id: "p_1",
      version: 0,
    });
    expect((await rowsFor(userId)).length).toBe(1);
  });

  test("the same event published twice without Nats-Msg-Id leaves one notification and no NATS DLQ entry", async () => {
    const userId = `dup-${crypto.randomUUID()}`;
    const bytes = eventBytes({ userId });
    const first = await publishEvent(bytes);
    const second = await publishEvent(bytes);
    expect(second.duplicate).toBe(false);
    await consumed(second.seq);
    expect((await rowsFor(userId)).length).toBe(1);
    const [processed] = await sql<{ n: number }[]>`
      select count(*)::int as n from processed_events where event_id = ${(await rowsFor(userId))[0]?.event_id ?? ""}`;
    expect(processed?.n).toBe(1);
    // A later poison message proves the advisory capture is running, so the absence below means something.
    const probe = await publishEvent(new Uint8Array([0x80]));
    await waitUntil(async () => ((await natsDlq(probe.seq)).length ? true : undefined), "the probe's advisory");
    expect((await natsDlq(first.seq)).length).toBe(0);
    expect((await natsDlq(second.seq)).length).toBe(0);
  });

  test("garbage bytes are terminated and recorded as MSG_TERMINATED with stream and consumer", async () => {
    const ack = await publishEvent(new TextEncoder().encode("\u0080not protobuf at all"));
    const [entry] = await waitUntil(async () => {
      const rows = await natsDlq(ack.seq);
      return rows.length ? rows : undefined;
    }, "the terminated advisory");
    expect(entry).toEqual({
      kind: "MSG_TERMINATED",
      stream: config.nats.stream,
      consumer: config.nats.durable,
      deliveries: 1,
    });
  });

  test("an event with an invalid event_id is terminated too, and creates nothing", async () => {
    const userId = `bad-${crypto.randomUUID()}`;
    const ack = await publishEvent(eventBytes({ userId, eventId: "1-1-1-1-1" }));
    await waitUntil(async () => ((await natsDlq(ack.seq)).length ? true : undefined), "the terminated advisory");
    expect((await rowsFor(userId)).length).toBe(0);
  });

  test("a user matching the failure-injection prefix ends FAILED after max attempts with one DLQ row", async () => {
    const userId = `e2e-dlq-${crypto.randomUUID()}`;
    const eventId = crypto.randomUUID();
    await publishEvent(eventBytes({ userId, eventId }), eventId);
    const [row] = await waitUntil(async () => {
      const rows = await rowsFor(userId);
      return rows[0]?.status === "FAILED" ? rows : undefined;
    }, "the notification to fail");
    expect(row?.attempt_count).toBe(3);
    const dlq = await sql<{ error_message: string }[]>`
      select error_message from notification_dlq where event_id = ${eventId}`;
    expect(dlq.length).toBe(1);
    expect(dlq[0]?.error_message).toBe(`notification delivery failure injection matched userId=${userId}`);
  });
});
