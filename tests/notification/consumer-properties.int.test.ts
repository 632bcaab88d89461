// A property of the consumer on real NATS and PostgreSQL: arbitrary byte strings, well-formed events and events the
// database would refuse, published together so that they share batches. Every well-formed event yields exactly one
// notification; every other message is terminated and lands in notification_nats_dlq; nothing is left unsettled.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { EntitlementEvent_EventType, EntitlementEventSchema } from "../../src/gen/entitlement_event_pb.ts";
import { createAdvisoryCapture } from "../../src/notification/intake/advisories/worker.ts";
import { type ConsumerHealth, createEventConsumer } from "../../src/notification/intake/consumer/worker.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createNatsLink } from "../../src/shared/nats.ts";
import { systemClock } from "../../src/shared/runtime.ts";
import { type DatabaseFixture, natsUrl, openTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { consumerBound, consumerOf, deleteStreams, streamsOf, testConfig, testMetrics } from "./helpers.ts";

setDefaultTimeout(180_000);

let f: DatabaseFixture;
let sql: Sql;
let nc: NatsConnection;
const config = testConfig();
const controller = new AbortController();
let running: Promise<void>[] = [];

beforeAll(async () => {
  f = await openTestDatabase("notif_consumer_props", { service: "notification", poolMax: 8 });
  sql = f.sql;
  nc = await connect({ servers: await natsUrl() });
  const health: ConsumerHealth = { bound: {} };
  const link = createNatsLink(Promise.resolve(nc), silentLogger);
  const common = { log: silentLogger, now: systemClock, metrics: testMetrics().metrics, link };
  const nats = config.nats;
  const consumer = consumerOf(config);
  running = [
    createEventConsumer({
      ...common,
      sql,
      ...consumer,
      batchSize: 50,
      health,
      onCreated: () => {},
      nakDelayMs: () => 50,
    }),
    ...consumer.advisories.map((advisory) =>
      createAdvisoryCapture({ ...common, sql, advisory, ackWaitMs: nats.ackWaitMs, maxDeliver: nats.maxDeliver }),
    ),
  ].map((w) => w.run(controller.signal));
  await consumerBound(health);
});
afterAll(async () => {
  controller.abort();
  await Promise.all(running);
  await deleteStreams(nc, streamsOf(config));
  await nc.close();
  await f.close();
});

/** Text the producer could send: 1–n characters, not blank, no NUL (other control characters are storable). */
const text = (min: number, max: number) =>
  fc
    .string({
      unit: fc.oneof(fc.constant("\n"), fc.constant("é"), fc.string({ unit: "grapheme", maxLength: 1 })),
      minLength: min,
      maxLength: max,
    })
    .filter((s) => s.length >= min && s.length <= max && !s.includes("\u0000") && (min === 0 || s.trim() !== ""));

/** An ISO-8601 instant with an offset PostgreSQL accepts (±15:59). */
const instant = fc
  .record({
    at: fc.date({ min: new Date("1971-01-01T00:00:00Z"), max: new Date("2999-12-31T00:00:00Z"), noInvalidDate: true }),
    offsetMinutes: fc.integer({ min: -959, max: 959 }),
  })
  .map(({ at, offsetMinutes }) => {
    const local = new Date(at.getTime() + offsetMinutes * 60_000).toISOString().slice(0, -1);
    if (offsetMinutes === 0) return `${local}Z`;
    const abs = Math.abs(offsetMinutes);
    const hh = String(Math.floor(abs / 60)).padStart(2, "0");
    const mm = String(abs % 60).padStart(2, "0");
    return `${local}${offsetMinutes < 0 ? "-" : "+"}${hh}:${mm}`;
  });

const wellFormed = fc.record({
  eventType: fc.constantFrom(
    EntitlementEvent_EventType.ENTITLEMENT_GRANTED,
    EntitlementEvent_EventType.ENTITLEMENT_REVOKED,
  ),
  occurredAt: instant,
  userId: text(1, 128),
  stockKeepingUnit: text(1, 128),
  source: text(0, 64),
  sourceId: text(0, 128),
  version: fc.bigInt({ min: 0n, max: 2n ** 53n - 1n }),
  traceId: text(0, 128),
});

/** A well-formed event with one field the database would refuse. */
const refused = fc.tuple(
  wellFormed,
  fc.constantFrom(
    { occurredAt: "2026-01-17T00:00:00+18:00" },
    { occurredAt: "2026-02-30T00:00:00Z" },
    { userId: "x".repeat(4_000) },
    { userId: "" },
    { userId: "   " },
    { stockKeepingUnit: "s".repeat(129) },
    { version: -1n },
    { version: 2n ** 53n },
    { sourceId: "a\u0000b" },
    { eventType: 7 as EntitlementEvent_EventType },
  ),
);

type Message = { kind: "valid" | "invalid"; bytes: Uint8Array; eventId?: string };

const encode = (fields: Record<string, unknown>, eventId: string) =>
  toBinary(EntitlementEventSchema, create(EntitlementEventSchema, { ...fields, eventId }));

const message: fc.Arbitrary<() => Message> = fc.oneof(
  {
    weight: 3,
    arbitrary: wellFormed.map((e) => () => {
      const eventId = crypto.randomUUID();
      return { kind: "valid", bytes: encode(e, eventId), eventId } as Message;
    }),
  },
  refused.map(
    ([e, bad]) =>
      () =>
        ({ kind: "invalid", bytes: encode({ ...e, ...bad }, crypto.randomUUID()) }) as Message,
  ),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => () => ({ kind: "invalid", bytes }) as Message),
);

test("every well-formed event yields its notification; every other message lands in notification_nats_dlq", async () => {
  const js = jetstream(nc);
  await fc.assert(
    fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 25 }), async (makers) => {
      const messages = makers.map((make) => make());
      const acks = await Promise.all(messages.map((m) => js.publish(config.nats.subject, m.bytes)));
      const validIds = messages.flatMap((m) => (m.kind === "valid" && m.eventId ? [m.eventId] : []));
      const invalidSeqs = messages.flatMap((m, i) => (m.kind === "invalid" ? [acks[i]?.seq ?? 0] : []));
      await waitUntil(
        async () => {
          const [stored] = await sql<{ n: number }[]>`
          select count(*)::int as n from notifications where event_id = any(${validIds}::uuid[])`;
          const [captured] = await sql<{ n: number }[]>`
          select count(*)::int as n from notification_nats_dlq
          where stream = ${config.nats.stream} and stream_seq = any(${invalidSeqs}::bigint[])`;
          return stored?.n === validIds.length && captured?.n === invalidSeqs.length ? true : undefined;
        },
        `${validIds.length} notifications and ${invalidSeqs.length} DLQ rows`,
        30_000,
        50,
      );
      const kinds = await sql<{ kind: string }[]>`
        select distinct kind from notification_nats_dlq
        where stream = ${config.nats.stream} and stream_seq = any(${invalidSeqs}::bigint[])`;
      expect(
        kinds.map((k) => k.kind).filter((k) => k !== "MSG_TERMINATED"),
        "terminated, not redelivered",
      ).toEqual([]);
      const [dlqForValid] = await sql<{ n: number }[]>`
        select count(*)::int as n from notification_nats_dlq
        where stream = ${config.nats.stream} and stream_seq = any(${acks.filter((_, i) => messages[i]?.kind === "valid").map((a) => a.seq)}::bigint[])`;
      expect(dlqForValid?.n, "no well-formed event in the DLQ").toBe(0);
    }),
    { numRuns: 25 },
  );
  const info = await (await jetstreamManager(nc)).consumers.info(config.nats.stream, config.nats.durable);
  expect(info.num_ack_pending, "every message settled").toBe(0);
});
