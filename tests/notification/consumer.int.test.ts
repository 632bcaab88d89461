// The event consumer and the advisory capture on real NATS: stream ownership, durable settings, NAK on database
// failure up to MAX_DELIVERIES, recovery from a deleted durable, and batches.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { AckPolicy, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection, nanos } from "@nats-io/transport-node";
import type { NotificationConfig } from "../../src/notification/config.ts";
import { createAdvisoryCapture } from "../../src/notification/intake/advisories/worker.ts";
import { type ConsumerHealth, createEventConsumer } from "../../src/notification/intake/consumer/worker.ts";
import { termTakesReason } from "../../src/notification/intake/nats/server.ts";
import type { NotificationMetrics } from "../../src/notification/metrics.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createNatsLink } from "../../src/shared/nats.ts";
import type { Worker } from "../../src/shared/runtime.ts";
import { systemClock } from "../../src/shared/runtime.ts";
import { type DatabaseFixture, natsUrl, openTestDatabase } from "../support/infra.ts";
import { startTcpProxyFor } from "../support/tcp-proxy.ts";
import { waitUntil } from "../support/wait.ts";
import {
  consumerBound,
  consumerOf,
  deleteStreams,
  eventBytes,
  notificationSql,
  streamsOf,
  testConfig,
  testMetrics,
} from "./helpers.ts";

setDefaultTimeout(120_000);

let f: DatabaseFixture;
let sql: Sql;
let nc: NatsConnection;
let jsm: JetStreamManager;
const configs: NotificationConfig[] = [];
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  f = await openTestDatabase("notif_consumer", { service: "notification", poolMax: 8 });
  sql = f.sql;
  nc = await connect({ servers: await natsUrl() });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  for (const stop of stops) await stop();
  for (const c of configs) await deleteStreams(nc, streamsOf(c));
  await nc.close();
  await f.close();
});

function config(env: Record<string, string> = {}): NotificationConfig {
  const c = testConfig(env);
  configs.push(c);
  return c;
}

type Started = { health: ConsumerHealth; metrics: NotificationMetrics };

/** Runs the event consumer (on `eventsSql`) and both advisory captures (on the healthy database). */
function start(c: NotificationConfig, options: { eventsSql?: Sql; batchSize?: number } = {}): Started {
  const health: ConsumerHealth = { bound: {} };
  const { metrics } = testMetrics();
  const link = createNatsLink(Promise.resolve(nc), silentLogger);
  const common = { log: silentLogger, now: systemClock, metrics, link };
  const workers: Worker[] = [
    createEventConsumer({
      ...common,
      sql: options.eventsSql ?? sql,
      ...consumerOf(c),
      batchSize: options.batchSize ?? 100,
      health,
      onCreated: () => {},
      nakDelayMs: () => 50,
    }),
    ...consumerOf(c).advisories.map((advisory) =>
      createAdvisoryCapture({ ...common, sql, advisory, ackWaitMs: c.nats.ackWaitMs, maxDeliver: c.nats.maxDeliver }),
    ),
  ];
  const controller = new AbortController();
  const running = workers.map((w) => w.run(controller.signal));
  stops.push(async () => {
    controller.abort();
    await Promise.all(running);
  });
  return { health, metrics };
}

const bound = (h: ConsumerHealth) => consumerBound(h);
const countFor = async (userPrefix: string) =>
  (await sql<{ n: number }[]>`select count(*)::int as n from notifications where user_id like ${`${userPrefix}%`}`)[0]
    ?.n ?? 0;

test("term carries a reason only for servers that understand it", () => {
  expect(termTakesReason({ info: { version: "2.9.10" } as never })).toBe(false);
  expect(termTakesReason({ info: { version: "2.10.0" } as never })).toBe(true);
  expect(termTakesReason({ info: { version: "3.0.1" } as never })).toBe(true);
  expect(termTakesReason({ info: undefined })).toBe(false);
});

describe("stream and durable", () => {
  test("an existing stream is never changed; an existing durable gets the configured settings", async () => {
    const c = config();
    await jsm.streams.add({
      name: c.nats.stream,
      subjects: [c.nats.subject, `${c.nats.subject}.other`],
      duplicate_window: nanos(30_000),
      max_age: nanos(3_600_000),
    });
    await jsm.consumers.add(c.nats.stream, {
      durable_name: c.nats.durable,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(30_000),
      max_deliver: 3,
      filter_subject: c.nats.subject,
    });
    const before = (await jsm.streams.info(c.nats.stream)).config;
    await bound(start(c).health);
    const after = (await jsm.streams.info(c.nats.stream)).config;
    expect(after).toEqual(before);
    const consumer = await jsm.consumers.info(c.nats.stream, c.nats.durable);
    expect(consumer.config.ack_wait, "a durable made with a longer ack wait is set to the configured one").toBe(
      nanos(3_000),
    );
    expect(consumer.config.max_deliver).toBe(10);
  });
});

describe("database failure", () => {
  test("an unreachable database holds the batch: no nak, no MAX_DELIVERIES, stored once the database is back", async () => {
    // max_deliver 2 and ack_wait 2s: the old nak-on-failure behaviour would give this event up within seconds.
    const c = config({ NOTIFICATION_NATS_MAX_DELIVER: "2", NOTIFICATION_NATS_ACK_WAIT: "2s" });
    const proxy = startTcpProxyFor(f.db.url);
    const viaProxy = notificationSql(proxy.url, 1);
    try {
      const { health, metrics } = start(c, { eventsSql: viaProxy });
      await bound(health);
      proxy.down();
      const userId = `outage-${crypto.randomUUID()}`;
      const ack = await jetstream(nc).publish(c.nats.subject, eventBytes({ userId }));
      await Bun.sleep(7_000); // more than max_deliver × ack_wait
      const given =
        await sql`select 1 from notification_nats_dlq where stream = ${c.nats.stream} and stream_seq = ${ack.seq}`;
      expect(given, "an outage never exhausts max_deliver").toHaveLength(0);
      const naks = (await metrics.events.get()).values.find((v) => v.labels.result === "nak");
      expect(naks?.value ?? 0).toBe(0);
      proxy.up();
      await waitUntil(async () => ((await countFor(userId)) === 1 ? true : undefined), "the held event to be stored");
      // The ack follows the commit, so the row can be seen a moment before the ack reaches the server.
      const acked = async () => (await jsm.consumers.info(c.nats.stream, c.nats.durable)).num_ack_pending === 0;
      await waitUntil(
        async () => ((await acked()) ? true : undefined),
        "the stored event to be acked after the commit",
      );
      expect(
        await sql`select 1 from notification_nats_dlq where stream = ${c.nats.stream} and stream_seq = ${ack.seq}`,
      ).toHaveLength(0);
    } finally {
      proxy.stop();
      await viaProxy.end({ timeout: 1 });
    }
  });

  test("a batch that can never be stored is NAK-ed until MAX_DELIVERIES, which is recorded", async () => {
    const c = config({ NOTIFICATION_NATS_MAX_DELIVER: "2", NOTIFICATION_NATS_ACK_WAIT: "2s" });
    // A schema without the tables: every insert fails with 42P01, which no retry can fix.
    const broken = createSql({ url: f.db.url, schema: "no_such_schema", max: 1, applicationName: "broken" });
    const { health, metrics } = start(c, { eventsSql: broken });
    await bound(health);
    const userId = `nak-${crypto.randomUUID()}`;
    const ack = await jetstream(nc).publish(c.nats.subject, eventBytes({ userId }));
    const [entry] = await waitUntil(async () => {
      const rows = await sql<{ kind: string; stream: string; consumer: string; deliveries: number }[]>`
        select kind, stream, consumer, deliveries::int from notification_nats_dlq
        where stream = ${c.nats.stream} and stream_seq = ${ack.seq}`;
      return rows.length ? rows : undefined;
    }, "the MAX_DELIVERIES advisory");
    expect(entry).toEqual({ kind: "MAX_DELIVERIES", stream: c.nats.stream, consumer: c.nats.durable, deliveries: 2 });
    const naks = (await metrics.events.get()).values.find((v) => v.labels.result === "nak");
    expect(naks?.value).toBe(2);
    expect(await countFor(userId)).toBe(0);
    await broken.end();
  });
});

describe("resilience and batches", () => {
  test("a deleted durable is created again and consuming goes on", async () => {
    const c = config();
    const { health } = start(c);
    await bound(health);
    await jsm.consumers.delete(c.nats.stream, c.nats.durable);
    const prefix = `again-${crypto.randomUUID()}`;
    await jetstream(nc).publish(c.nats.subject, eventBytes({ userId: `${prefix}-1` }));
    await waitUntil(async () => ((await countFor(prefix)) === 1 ? true : undefined), "the event after re-creation");
    expect(health.bound.entitlement).toBe(true);
  });

  test("a burst of events becomes exactly one notification each, duplicates included", async () => {
    const c = config();
    const { health, metrics } = start(c, { batchSize: 25 });
    await bound(health);
    const prefix = `burst-${crypto.randomUUID()}`;
    const js = jetstream(nc);
    const events = Array.from({ length: 120 }, (_, i) => eventBytes({ userId: `${prefix}-${i}` }));
    await Promise.all(events.map((e) => js.publish(c.nats.subject, e)));
    await Promise.all(events.slice(0, 30).map((e) => js.publish(c.nats.subject, e)));
    await waitUntil(async () => {
      const values = (await metrics.events.get()).values;
      const total = values.reduce((sum, v) => sum + v.value, 0);
      return total >= 150 ? true : undefined;
    }, "all 150 messages to be handled");
    expect(await countFor(prefix)).toBe(120);
    const values = (await metrics.events.get()).values;
    expect(values.find((v) => v.labels.result === "created")?.value).toBe(120);
    expect(values.find((v) => v.labels.result === "duplicate")?.value).toBe(30);
  });
});

describe("poison in a batch", () => {
  const dlqKinds = async (stream: string, seqs: number[]) =>
    sql<{ stream_seq: number; kind: string }[]>`
      select stream_seq::int, kind from notification_nats_dlq
      where stream = ${stream} and stream_seq = any(${seqs}::bigint[]) order by stream_seq`;

  test("events the database would refuse are terminated into the DLQ; the valid ones of the batch are stored", async () => {
    // Default advisory subjects: they must follow this test's stream and durable names.
    const c = config();
    await jsm.streams.add({ name: c.nats.stream, subjects: [c.nats.subject] });
    const prefix = `poison-${crypto.randomUUID()}`;
    // A check constraint stands in for any refusal that only the database can see (class 23): the event passes
    // decoding, so only isolating it inside the failed transaction can save the others.
    const refused = `${prefix}-refused`;
    const constraint = prefix.replaceAll("-", "_");
    await sql.unsafe(`alter table notifications add constraint ${constraint} check (user_id <> '${refused}')`);
    const js = jetstream(nc);
    const publish = async (bytes: Uint8Array) => (await js.publish(c.nats.subject, bytes)).seq;
    const poison = [
      await publish(eventBytes({ userId: `${prefix}-offset`, occurredAt: "2026-01-17T00:00:00+18:00" })),
      await publish(eventBytes({ userId: `${prefix}-${"x".repeat(4_000)}` })),
      await publish(eventBytes({ userId: "" })),
      await publish(eventBytes({ userId: `${prefix}-neg`, version: -1n })),
      await publish(eventBytes({ userId: `${prefix}-big`, version: 2n ** 53n })),
      await publish(new Uint8Array([0x0a, 0xff, 0xff])),
      await publish(eventBytes({ userId: refused })),
    ];
    for (let i = 0; i < 10; i++) await publish(eventBytes({ userId: `${prefix}-ok-${i}` }));
    try {
      const { health } = start(c, { batchSize: 100 });
      await bound(health);
      await waitUntil(async () => ((await countFor(`${prefix}-ok-`)) === 10 ? true : undefined), "the valid events");
      const captured = await waitUntil(async () => {
        const rows = await dlqKinds(c.nats.stream, poison);
        return rows.length === poison.length ? rows : undefined;
      }, "every poison message in notification_nats_dlq");
      expect(
        captured.map((r) => r.kind),
        "terminated at once, not redelivered to max_deliver",
      ).toEqual(poison.map(() => "MSG_TERMINATED"));
      expect(await countFor(prefix), "nothing but the valid events stored").toBe(10);
      const info = await jsm.consumers.info(c.nats.stream, c.nats.durable);
      expect(info.num_ack_pending, "every message settled").toBe(0);
    } finally {
      await sql.unsafe(`alter table notifications drop constraint ${constraint}`);
    }
  });
});
