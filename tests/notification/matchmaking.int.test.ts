// The matchmaking pipeline on real NATS and PostgreSQL, through the same workers main runs: the subscriber's cases of
// the Java original (handled then acked; stream created with its duplicate window, ack wait and max deliver) and
// the handler's duplicate case, plus what the original lacked: players notified, invalid events
// terminated and recorded in notification_nats_dlq with their stream, and a given-up event replayed.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { nanos } from "@nats-io/transport-node";
import type { NotificationConfig } from "../../src/notification/config.ts";
import { createAdvisoryCapture } from "../../src/notification/intake/advisories/worker.ts";
import { type ConsumerHealth, createEventConsumer } from "../../src/notification/intake/consumer/worker.ts";
import { replayNatsDlq } from "../../src/notification/ops/nats-dlq.ts";
import { createSql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createNatsLink } from "../../src/shared/nats.ts";
import { systemClock } from "../../src/shared/runtime.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import {
  consumerBound,
  consumerOf,
  deleteStreams,
  matchBytes,
  streamsOf,
  testConfig,
  testMetrics,
  usePipeline,
} from "./helpers.ts";

setDefaultTimeout(120_000);

const f = useTestDatabase("notif_matchmaking", { service: "notification" });
const config = testConfig();
const mm = config.nats.matchmaking as NonNullable<NotificationConfig["nats"]["matchmaking"]>;
const { metrics } = testMetrics();
const pipe = usePipeline(f, {
  config,
  metrics,
  workerId: "matchmaking-worker",
  sources: ["matchmaking", "entitlement"],
  refuse: (userId) => userId.startsWith("p-fail"),
});
const { sent } = pipe;

type Row = { user_id: string; type: string; status: string; payload_json: Record<string, unknown> };
const notificationsOf = (eventId: string) =>
  f.sql<Row[]>`select user_id, type, status, payload_json from notifications where event_id = ${eventId}
    order by user_id`;
const natsDlqRow = (seq: number) =>
  f.sql<{ kind: string; consumer: string }[]>`select kind, consumer from notification_nats_dlq
    where stream = ${mm.stream} and stream_seq = ${seq}`;
const counter = async (result: string) =>
  (await metrics.events.get()).values.find((v) => v.labels.source === "matchmaking" && v.labels.result === result)
    ?.value ?? 0;

describe("matchmaking consumer", () => {
  test("creates its stream with a 2m duplicate window, and its durable with ack wait 3s and max deliver 10", async () => {
    const stream = await pipe.jsm.streams.info(mm.stream);
    expect(stream.config.subjects).toEqual([mm.subject]);
    expect(stream.config.duplicate_window).toBe(nanos(120_000));
    const durable = await pipe.jsm.consumers.info(mm.stream, mm.durable);
    expect(durable.config.ack_wait).toBe(nanos(3_000));
    expect(durable.config.max_deliver).toBe(10);
    expect(durable.config.filter_subject).toBe(mm.subject);
  });

  test("every listed player gets a MatchFound notification, delivered, and the message is acked (63)", async () => {
    const eventId = crypto.randomUUID();
    await pipe.js.publish(
      mm.subject,
      matchBytes({ eventId, matchId: "m-63", mode: "rank", userIds: ["p-ann", "p-ben"] }),
      {
        msgID: eventId,
      },
    );
    const rows = await waitUntil(async () => {
      const r = await notificationsOf(eventId);
      return r.length === 2 && r.every((n) => n.status === "SENT") ? r : undefined;
    }, "both players' notifications to be sent");
    const payload = { match_id: "m-63", mode: "rank", user_ids: ["p-ann", "p-ben"] };
    expect([...rows]).toEqual([
      { user_id: "p-ann", type: "MatchFound", status: "SENT", payload_json: payload },
      { user_id: "p-ben", type: "MatchFound", status: "SENT", payload_json: payload },
    ]);
    expect(sent.filter((s) => s.payload.match_id === "m-63").map((s) => s.userId)).toEqual(
      expect.arrayContaining(["p-ann", "p-ben"]),
    );
    const info = await pipe.jsm.consumers.info(mm.stream, mm.durable);
    expect(info.num_ack_pending, "acked after the commit").toBe(0);
    expect(info.num_redelivered, "acked at the first delivery").toBe(0);
  });

  test("delivery treats a MatchFound like any other: the failing player's ends FAILED in the DLQ, the other SENT", async () => {
    const eventId = crypto.randomUUID();
    await pipe.js.publish(mm.subject, matchBytes({ eventId, userIds: ["p-fail-1", "p-fine-1"] }));
    const rows = await waitUntil(async () => {
      const r = await notificationsOf(eventId);
      return r.length === 2 && r.every((n) => n.status === "SENT" || n.status === "FAILED") ? r : undefined;
    }, "both notifications to reach a final status");
    expect(rows.map((r) => [r.user_id, r.status])).toEqual([
      ["p-fail-1", "FAILED"],
      ["p-fine-1", "SENT"],
    ]);
    const dlq = await f.sql`select 1 from notification_dlq where event_id = ${eventId}`;
    expect(dlq, "one DLQ row, for the failing player only").toHaveLength(1);
  });

  test("an event without players notifies matchmaking-system with only match_id, as the original did", async () => {
    const eventId = crypto.randomUUID();
    await pipe.js.publish(mm.subject, matchBytes({ eventId, matchId: "m-system" }));
    const rows = await waitUntil(async () => {
      const r = await notificationsOf(eventId);
      return r.length === 1 ? r : undefined;
    }, "the matchmaking-system notification");
    expect(rows[0]).toMatchObject({ user_id: "matchmaking-system", type: "MatchFound" });
    expect(rows[0]?.payload_json).toEqual({ match_id: "m-system" });
  });

  test("the same event again, without Nats-Msg-Id, adds nothing (89)", async () => {
    const eventId = crypto.randomUUID();
    const body = matchBytes({ eventId, userIds: ["p-dup-1", "p-dup-2"] });
    await pipe.js.publish(mm.subject, body);
    await waitUntil(async () => ((await notificationsOf(eventId)).length === 2 ? true : undefined), "the first copy");
    const duplicatesBefore = await counter("duplicate");
    const again = await pipe.js.publish(mm.subject, body);
    expect(again.duplicate, "no Nats-Msg-Id: JetStream stores it again").toBe(false);
    await waitUntil(async () => ((await counter("duplicate")) > duplicatesBefore ? true : undefined), "the copy");
    expect(await notificationsOf(eventId)).toHaveLength(2);
    const [processed] = await f.sql<{ n: number }[]>`
      select count(*)::int as n from processed_events where event_id = ${eventId}`;
    expect(processed?.n).toBe(1);
  });

  test("an invalid event is terminated and recorded with its stream; the valid events fetched with it are stored", async () => {
    const good = crypto.randomUUID();
    const [bad] = await Promise.all([
      pipe.js.publish(mm.subject, matchBytes({ matchId: " " })),
      pipe.js.publish(mm.subject, matchBytes({ eventId: good, userIds: ["p-good"] })),
    ]);
    const [entry] = await waitUntil(async () => {
      const rows = await natsDlqRow(bad?.seq ?? 0);
      return rows.length ? rows : undefined;
    }, "the MSG_TERMINATED advisory of the matchmaking consumer");
    expect(entry).toEqual({ kind: "MSG_TERMINATED", consumer: mm.durable });
    await waitUntil(async () => ((await notificationsOf(good)).length === 1 ? true : undefined), "the valid event");
    const recorded = (await metrics.natsDlq.get()).values.find((v) => v.labels.source === "matchmaking");
    expect(recorded?.value, "the NATS DLQ metric names the source").toBeGreaterThanOrEqual(1);
  });
});

describe("a matchmaking event given up by its consumer", () => {
  test("is recorded as MAX_DELIVERIES and, once replayed, notifies its players", async () => {
    const c = testConfig({
      NOTIFICATION_MATCHMAKING_NATS_MAX_DELIVER: "2",
      NOTIFICATION_MATCHMAKING_NATS_ACK_WAIT: "1s",
    });
    const cmm = c.nats.matchmaking as NonNullable<NotificationConfig["nats"]["matchmaking"]>;
    const link = createNatsLink(Promise.resolve(pipe.nc), silentLogger);
    const common = { log: silentLogger, now: systemClock, metrics: testMetrics().metrics, link };
    const { pipeline, advisories } = consumerOf(c, "matchmaking");
    const h: ConsumerHealth = { bound: {} };
    const run = (sql: typeof f.sql, controller: AbortController) =>
      createEventConsumer({ ...common, sql, pipeline, advisories, batchSize: 10, health: h, onCreated: () => {} }).run(
        controller.signal,
      );
    const captures = new AbortController();
    const capturing = advisories.map((advisory) =>
      createAdvisoryCapture({ ...common, sql: f.sql, advisory, ackWaitMs: 10_000, maxDeliver: 10 }).run(
        captures.signal,
      ),
    );
    // A schema without the tables: every insert fails with 42P01, which no retry fixes.
    const broken = createSql({ url: f.db.url, schema: "no_such_schema", max: 1, applicationName: "broken" });
    const first = new AbortController();
    const failing = run(broken, first);
    try {
      await consumerBound(h, "matchmaking");
      const eventId = crypto.randomUUID();
      const ack = await pipe.js.publish(cmm.subject, matchBytes({ eventId, userIds: ["p-late"] }), { msgID: eventId });
      await waitUntil(async () => {
        const rows = await f.sql`select 1 from notification_nats_dlq
          where stream = ${cmm.stream} and stream_seq = ${ack.seq} and kind = 'MAX_DELIVERIES'`;
        return rows.length ? true : undefined;
      }, "the MAX_DELIVERIES advisory of the matchmaking consumer");
      first.abort();
      await failing;
      const second = new AbortController();
      const healthy = run(f.sql, second);
      const lines: string[] = [];
      const code = await replayNatsDlq(
        { sql: f.sql, out: (l) => lines.push(l) },
        { js: pipe.js, jsm: pipe.jsm },
        { streamSeq: ack.seq, force: false, stream: cmm.stream },
      );
      expect(code, lines.join("\n")).toBe(0);
      await waitUntil(async () => ((await notificationsOf(eventId)).length === 1 ? true : undefined), "the replay");
      second.abort();
      await healthy;
    } finally {
      first.abort();
      captures.abort();
      await Promise.all(capturing);
      await broken.end({ timeout: 1 });
      await deleteStreams(pipe.nc, streamsOf(c));
    }
  });
});
