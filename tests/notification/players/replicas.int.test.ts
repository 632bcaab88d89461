// Two replicas of Notification on one database and one NATS: a stream open on A receives, in seq order, what B's
// consumer stored from the event stream (B tells A over core NATS after its commit). Signals are only hints: with
// every signal dropped, A's recheck still delivers everything, and a stream resumed on the other replica carries on
// where the first one stopped.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type JetStreamClient, jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { NotificationConfig } from "../../../src/notification/config.ts";
import type { ConsumerHealth } from "../../../src/notification/intake/consumer/worker.ts";
import { natsUrl, uniqueName } from "../../support/infra.ts";
import { consumerBound, deleteStreams, eventBytes, streamsOf } from "../helpers.ts";
import { playerConfig, type Replica, range, received, seqsOf, startReplica, usePlayerStreams } from "./harness.ts";

setDefaultTimeout(90_000);

const p = usePlayerStreams("player_replicas", 12);
const { f } = p;
let config: NotificationConfig;
let ncA: NatsConnection;
let ncB: NatsConnection;
let js: JetStreamClient;
let a: Replica;
let b: Replica;
let dropping = false;
const stream = p.open;

async function grant(userId: string, times: number) {
  for (let i = 0; i < times; i++) await js.publish(config.nats.subject, eventBytes({ userId }));
}

beforeAll(async () => {
  // The recheck is long: a notification that arrives sooner came by the signal.
  config = playerConfig(p.idp, { NOTIFICATION_STREAM_RECHECK_INTERVAL: "60s" });
  ncA = await connect({ servers: await natsUrl() });
  ncB = await connect({ servers: await natsUrl() });
  js = jetstream(ncB);
  const health: ConsumerHealth = { bound: {} };
  a = await startReplica({ config, sql: f.sql, nc: ncA });
  b = await startReplica({ config, sql: f.sql, nc: ncB, consume: true, health, dropSignals: () => dropping });
  await consumerBound(health);
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await deleteStreams(ncB, streamsOf(config));
  await ncA?.close();
  await ncB?.close();
});

describe("two replicas", () => {
  test("a stream on A receives what B stored, in seq order", async () => {
    const player = uniqueName("player");
    const onA = await stream(a, player);
    await grant(player, 20);
    await received(onA, 20, "B's notifications on A's stream");
    expect(seqsOf(onA)).toEqual(range(1, 20));
    expect(a.players.hub.size()).toBe(1);
  });

  test("resumed on the other replica, a stream carries on where it stopped", async () => {
    const player = uniqueName("mover");
    const onA = await stream(a, player);
    await grant(player, 5);
    await received(onA, 5, "the first five on A");
    onA.close();
    await grant(player, 5);
    const onB = await stream(b, player, { "last-event-id": "5" });
    await received(onB, 10, "the rest on B");
    expect(seqsOf(onB)).toEqual(range(6, 10));
  });
});

describe("lost signals", () => {
  test("cost latency, never an event: with every signal dropped, A's recheck delivers everything", async () => {
    const slow = await startReplica({
      config: playerConfig(p.idp, {
        NOTIFICATION_STREAM_RECHECK_INTERVAL: "200ms",
        NOTIFICATION_PLAYER_NATS_SUBJECT: config.players.subject,
      }),
      sql: f.sql,
      nc: ncA,
    });
    try {
      dropping = true;
      const player = uniqueName("unsignalled");
      const reader = await stream(slow, player);
      await grant(player, 10);
      await received(reader, 10, "every notification, found by the recheck");
      expect(seqsOf(reader)).toEqual(range(1, 10));
      const metric = await b.registry.getSingleMetric("notification_player_signals_total")?.get();
      const dropped = metric?.values.find((v) => v.labels.direction === "dropped")?.value ?? 0;
      expect(dropped, "B did drop its signals").toBeGreaterThan(0);
    } finally {
      dropping = false;
      await slow.stop();
    }
  });
});
