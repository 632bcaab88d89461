// The points pipeline on real NATS and PostgreSQL, through the same workers main runs: a PointsEvent becomes one
// delivered PointsGranted notification, a copy of it adds nothing, and an invalid one is terminated and recorded in
// notification_nats_dlq with its stream.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { NotificationConfig } from "../../src/notification/config.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { pointsBytes, testConfig, testMetrics, usePipeline } from "./helpers.ts";

setDefaultTimeout(120_000);

const f = useTestDatabase("notif_points", { service: "notification" });
const config = testConfig();
const points = config.nats.points as NonNullable<NotificationConfig["nats"]["points"]>;
const { metrics } = testMetrics();
const pipe = usePipeline(f, { config, metrics, workerId: "points-worker", sources: ["points"] });
const { sent } = pipe;

type Row = { user_id: string; type: string; status: string; payload_json: Record<string, unknown> };
const notificationsOf = (eventId: string) =>
  f.sql<Row[]>`select user_id, type, status, payload_json from notifications where event_id = ${eventId}`;
const counter = async (result: string) =>
  (await metrics.events.get()).values.find((v) => v.labels.source === "points" && v.labels.result === result)?.value ??
  0;

describe("points consumer", () => {
  test("reads the configured stream and subject through its own durable", async () => {
    const stream = await pipe.jsm.streams.info(points.stream);
    expect(stream.config.subjects).toEqual([points.subject]);
    const durable = await pipe.jsm.consumers.info(points.stream, points.durable);
    expect(durable.config.filter_subject).toBe(points.subject);
  });

  test("a PointsEvent becomes one SENT PointsGranted for its user, and the message is acked", async () => {
    const eventId = crypto.randomUUID();
    const reservationId = crypto.randomUUID();
    const body = pointsBytes({ eventId, userId: "pts-ann", reservationId, pointAmount: 300n, balanceAfter: 700n });
    await pipe.js.publish(points.subject, body, { msgID: eventId });
    const rows = await waitUntil(async () => {
      const r = await notificationsOf(eventId);
      return r.length === 1 && r[0]?.status === "SENT" ? r : undefined;
    }, "the PointsGranted notification to be sent");
    const payload = { reservation_id: reservationId, point_amount: 300, balance_after: 700 };
    expect([...rows]).toEqual([{ user_id: "pts-ann", type: "PointsGranted", status: "SENT", payload_json: payload }]);
    expect(sent.filter((s) => s.payload.reservation_id === reservationId)).toEqual([
      { userId: "pts-ann", type: "PointsGranted", payload },
    ]);
    const info = await pipe.jsm.consumers.info(points.stream, points.durable);
    expect(info.num_ack_pending, "acked after the commit").toBe(0);
  });

  test("the same event again, without Nats-Msg-Id, adds nothing", async () => {
    const eventId = crypto.randomUUID();
    const body = pointsBytes({ eventId, userId: "pts-dup" });
    await pipe.js.publish(points.subject, body);
    await waitUntil(async () => ((await notificationsOf(eventId)).length === 1 ? true : undefined), "the first copy");
    const duplicatesBefore = await counter("duplicate");
    const again = await pipe.js.publish(points.subject, body);
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
      pipe.js.publish(points.subject, pointsBytes({ pointAmount: 0n })),
      pipe.js.publish(points.subject, pointsBytes({ eventId: good, userId: "pts-good" })),
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
