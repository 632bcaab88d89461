// The consumer's ack wait against a crash and against slow work: a `serve` process killed with kill -9 while it holds
// a message gets that message redelivered to another consumer one ack wait later, and a message held longer than the
// ack wait (a slow batch, a database outage, a buffer behind them) is never redelivered while its holder lives.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { NotificationConfig } from "../../src/notification/config.ts";
import { storeEvents } from "../../src/notification/intake/consumer/batch.ts";
import { type ConsumerHealth, createEventConsumer } from "../../src/notification/intake/consumer/worker.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createNatsLink } from "../../src/shared/nats.ts";
import { systemClock } from "../../src/shared/runtime.ts";
import { natsUrl, useTestDatabase } from "../support/infra.ts";
import { serve } from "../support/serve.ts";
import { startTcpProxyFor } from "../support/tcp-proxy.ts";
import { waitUntil } from "../support/wait.ts";
import {
  consumerBound,
  consumerOf,
  deleteStreams,
  eventBytes,
  serveEnv,
  streamsOf,
  testConfig,
  testMetrics,
} from "./helpers.ts";

setDefaultTimeout(120_000);

const MAIN = new URL("../../src/notification/main.ts", import.meta.url).pathname;
/** The ack wait this service had before: a killed process's messages waited this long. */
const OLD_ACK_WAIT_MS = 10_000;

const f = useTestDatabase("notif_crash", { service: "notification" });
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
const configs: NotificationConfig[] = [];
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  nc = await connect({ servers: await natsUrl() });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  for (const c of configs) await deleteStreams(nc, streamsOf(c));
  await nc.close();
});

function config(env: Record<string, string> = {}): NotificationConfig {
  const c = testConfig({
    NOTIFICATION_MATCHMAKING_NATS_ENABLED: "false",
    NOTIFICATION_POINTS_NATS_ENABLED: "false",
    ...env,
  });
  configs.push(c);
  return c;
}

/** The entitlement consumer in this process, storing through `store` (the real one unless a test slows it). */
async function startConsumer(c: NotificationConfig, options: { batchSize?: number; store?: typeof storeEvents } = {}) {
  const health: ConsumerHealth = { bound: {} };
  const worker = createEventConsumer({
    sql: f.sql,
    log: silentLogger,
    now: systemClock,
    metrics: testMetrics().metrics,
    link: createNatsLink(Promise.resolve(nc), silentLogger),
    ...consumerOf(c),
    batchSize: options.batchSize ?? 100,
    health,
    onCreated: () => {},
    store: options.store,
  });
  const controller = new AbortController();
  const running = worker.run(controller.signal);
  stops.push(async () => {
    controller.abort();
    await running;
  });
  await consumerBound(health);
}

const durableInfo = (c: NotificationConfig) => jsm.consumers.info(c.nats.stream, c.nats.durable);
const storedAt = async (userId: string) => {
  const [row] = await f.sql<{ n: number }[]>`select count(*)::int as n from notifications where user_id = ${userId}`;
  return (row?.n ?? 0) > 0 ? Date.now() : undefined;
};

describe("a consumer killed with kill -9", () => {
  test("its message in hand is redelivered one ack wait later, not held while it lived", async () => {
    const c = config();
    const ackWaitMs = c.nats.ackWaitMs;
    expect(ackWaitMs, "the default ack wait is well below the old one").toBeLessThan(OLD_ACK_WAIT_MS / 2);
    // The child reaches PostgreSQL through a proxy: cut, it holds what it received (an outage is not a failure).
    const proxy = startTcpProxyFor(f.db.url);
    stops.push(async () => proxy.stop());
    const env = serveEnv(c, { database: proxy.url, nats: await natsUrl() });
    const child = serve(MAIN, "notification", { ...env, NOTIFICATION_DELIVERY_ENABLED: "false" });
    stops.push(async () => void child.child.kill("SIGKILL"));
    const base = `http://127.0.0.1:${await child.port}`;
    // A child that dies on the way fails the test with what it printed, not with a refused fetch.
    const died = child.child.exited.then(async (code) => {
      throw new Error(`the child exited (${code}) before it was ready:\n${await child.output}`);
    });
    died.catch(() => {});
    const readyz = async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200;
    await Promise.race([waitUntil(readyz, "the child to bind its consumer"), died]);

    proxy.down();
    const userId = `crash-${crypto.randomUUID()}`;
    await js.publish(c.nats.subject, eventBytes({ userId }));
    await waitUntil(async () => (await durableInfo(c)).num_ack_pending === 1, "the child to hold the message");
    // A second consumer waits on the same durable: it must not get the message while its holder is alive.
    await startConsumer(c);
    await Bun.sleep(ackWaitMs * 2);
    const held = await durableInfo(c);
    expect(held.num_redelivered, "kept in progress past two ack waits, never redelivered").toBe(0);
    expect(await storedAt(userId), "not stored by the waiting consumer").toBeUndefined();

    child.child.kill("SIGKILL");
    await child.child.exited;
    const killedAt = Date.now();
    const stored = await waitUntil(() => storedAt(userId), "the redelivered message to be stored", 30_000, 50);
    const elapsed = stored - killedAt;
    // Redelivery comes one ack wait after the last progress signal; the old 10 s could never have been this quick.
    expect(elapsed, `stored ${elapsed}ms after the kill (ack wait ${ackWaitMs}ms)`).toBeLessThan(
      OLD_ACK_WAIT_MS - ackWaitMs,
    );
    await waitUntil(async () => (await durableInfo(c)).num_ack_pending === 0, "the live consumer to ack it");
  });
});

describe("a message held longer than the ack wait", () => {
  test("neither a slow batch nor the messages buffered behind it are redelivered while the holder lives", async () => {
    const c = config({ NOTIFICATION_NATS_ACK_WAIT: "1s" });
    const calls = new Map<string, number>();
    const slowStore: typeof storeEvents = async (sql, events, now) => {
      for (const e of events) calls.set(e.eventId, (calls.get(e.eventId) ?? 0) + 1);
      await Bun.sleep(c.nats.ackWaitMs * 2.5);
      return storeEvents(sql, events, now);
    };
    // One message a batch: while the first is worked for 2.5 ack waits, the others wait in the client's buffer.
    await startConsumer(c, { batchSize: 1, store: slowStore });
    const users = Array.from({ length: 3 }, (_, i) => `slow-${i}-${crypto.randomUUID()}`);
    for (const userId of users) await js.publish(c.nats.subject, eventBytes({ userId }));
    for (const userId of users) await waitUntil(() => storedAt(userId), `${userId} to be stored`, 60_000);
    const info = await durableInfo(c);
    expect(info.num_redelivered, "no message was redelivered").toBe(0);
    expect([...calls.values()], "each event reached the store exactly once").toEqual([1, 1, 1]);
  });
});
