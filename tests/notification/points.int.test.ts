// The points pipeline on real NATS and PostgreSQL, through the same workers main runs: a PointsEvent becomes one
// delivered PointsGranted notification, a copy of it adds nothing, and an invalid one is terminated and recorded in
// notification_nats_dlq with its stream.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { NotificationConfig } from "../../src/notification/config.ts";
import type { ConsumerHealth } from "../../src/notification/intake/consumer/worker.ts";
import { createWorkers } from "../../src/notification/workers.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createNatsLink } from "../../src/shared/nats.ts";
import { systemClock, Waker } from "../../src/shared/runtime.ts";
import { natsUrl, useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { consumerBound, deleteStreams, pointsBytes, streamsOf, testConfig, testMetrics } from "./helpers.ts";

setDefaultTimeout(120_000);

const f = useTestDatabase("notif_points", { service: "notification" });
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
const config = testConfig();
const points = config.nats.points as NonNullable<NotificationConfig["nats"]["points"]>;
const health: ConsumerHealth = { bound: {} };
const { metrics } = testMetrics();
const sent: { userId: string; type: string; payload: Record<string, unknown> }[] = [];
const stop = new AbortController();
let running: Promise<void>[] = [];

beforeAll(async () => {
  nc = await connect({ servers: await natsUrl() });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  const workers = createWorkers({
    config,
    sql: f.sql,
    log: silentLogger,
    now: systemClock,
    metrics,
    waker: new Waker(),
    workerId: "points-worker",
    link: createNatsLink(Promise.resolve(nc), silentLogger),
    health,
    send: async (d) => {
      sent.push({ userId: d.userId, type: d.type, payload: d.payload });
    },
  });
  running = workers.map((w) => w.run(stop.signal));
  await consumerBound(health, "points");
});

afterAll(async () => {
  stop.abort();
  await Promise.all(running);
  await deleteStreams(nc, streamsOf(config));
  await nc.close();
});

type Row = { user_id: string; type: string; status: string; payload_json: Record<string, unknown> };
const notificationsOf = (eventId: string) =>
  f.sql<Row[]>`select user_id, type, status, payload_json from notifications where event_id = ${eventId}`;
const counter = async (result: string) =>
  (await metrics.events.get()).values.find((v) => v.labels.source === "points" && v.labels.result === result)?.value ??
  0;

describe("points consumer", () => {
  test("reads the configured stream and subject through its own durable", async () => {
    const stream = await jsm.streams.info(points.stream);
    expect(stream.config.subjects).toEqual([points.subject]);
    const durable = await jsm.consumers.info(points.stream, points.durable);
    expect(durable.config.filter_subject).toBe(points.subject);
  });

  test("a PointsEvent becomes one SENT PointsGranted for its user, and the message is acked", async () => {
    const eventId = crypto.randomUUID();
    const reservationId = crypto.randomUUID();
    const body = pointsBytes({ eventId, userId: "pts-ann", reservationId, pointAmount: 300n, balanceAfter: 700n });
    await js.publish(points.subject, body, { msgID: eventId });
    const rows = await waitUntil(async () => {
      const r = await notificationsOf(eventId);
      return r.length === 1 && r[0]?.status === "SENT" ? r : undefined;
    }, "the PointsGranted notification to be sent");
    const payload = { reservation_id: reservationId, point_amount: 300, balance_after: 700 };
    expect([...rows]).toEqual([{ user_id: "pts-ann", type: "PointsGranted", status: "SENT", payload_json: payload }]);
    expect(sent.filter((s) => s.payload.reservation_id === reservationId)).toEqual([
      { userId: "pts-ann", type: "PointsGranted", payload },
    ]);
    const info = await jsm.consumers.info(points.stream, points.durable);
    expect(info.num_ack_pending, "acked after the commit").toBe(0);
  });

  test("the same event again, without Nats-Msg-Id, adds nothing", async () => {
    const eventId = crypto.randomUUID();
    const body = pointsBytes({ eventId, userId: "pts-dup" });
    await js.publish(points.subject, body);
    await waitUntil(async () => ((await notificationsOf(eventId)).length === 1 ? true : undefined), "the first copy");
    const duplicatesBefore = await counter("duplicate");
    const again = await js.publish(points.subject, body);
    expect(again.duplicate, "no Nats-Msg-Id: JetStream stores it again").toBe(false);
    await waitUntil(async () => ((await counter("duplicate")) > duplicatesBefore ? true : undefined), "the copy");
    expect(await notificationsOf(eventId)).toHaveLength(1);
    const [processed] = await f.sql<{ n: number }[]>`
      select count(*)::int as n from processed_events where event_id = ${eventId}`;
    expect(processed?.n).toBe(1);
  });

  test("an invalid event is terminated and recorded with its stream; the valid event fetched with it is stored", async () => {
    const good = crypto.randomUUID();
    const [bad] = await Promise.all([
      js.publish(points.subject, pointsBytes({ pointAmount: 0n })),
      js.publish(points.subject, pointsBytes({ eventId: good, userId: "pts-good" })),
    ]);
    const [entry] = await waitUntil(async () => {
      const rows = await f.sql<{ kind: string; consumer: string }[]>`select kind, consumer from notification_nats_dlq
        where stream = ${points.stream} and stream_seq = ${bad?.seq ?? 0}`;
      return rows.length ? rows : undefined;
    }, "the MSG_TERMINATED advisory of the points consumer");
    expect(entry).toEqual({ kind: "MSG_TERMINATED", consumer: points.durable });
    await waitUntil(async () => ((await notificationsOf(good)).length === 1 ? true : undefined), "the valid event");
    const [stored] = await f.sql<{ n: number }[]>`
      select count(*)::int as n from notifications where type = 'PointsGranted' and payload_json ->> 'point_amount' = '0'`;
    expect(stored?.n, "nothing stored for the invalid event").toBe(0);
    expect(await counter("terminated")).toBeGreaterThanOrEqual(1);
  });
});
