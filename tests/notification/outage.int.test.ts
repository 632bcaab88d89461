// A NATS outage on a private nats-server (the shared one is never touched): the consumer survives a server restart
// and goes on consuming. Skipped when no nats-server binary is installed.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type ConsumerHealth, createEventConsumer } from "../../src/notification/intake/consumer/worker.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createNatsLink } from "../../src/shared/nats.ts";
import { systemClock } from "../../src/shared/runtime.ts";
import { type DatabaseFixture, openTestDatabase } from "../support/infra.ts";
import { natsServerBinary, type PrivateNats, privateNats } from "../support/nats-server.ts";
import { waitUntil } from "../support/wait.ts";
import { consumerOf, eventBytes, testConfig, testMetrics } from "./helpers.ts";

setDefaultTimeout(120_000);

const binary = natsServerBinary;
let f: DatabaseFixture;
let sql: Sql;
let broker: PrivateNats;

beforeAll(async () => {
  if (!binary) return;
  f = await openTestDatabase("notif_outage", { service: "notification", poolMax: 8 });
  sql = f.sql;
  broker = privateNats("notif-outage");
  await broker.start();
});
afterAll(async () => {
  if (!binary) return;
  await broker.dispose();
  await f.close();
});

async function publishWhenUp(nc: NatsConnection, subject: string, data: Uint8Array): Promise<void> {
  await waitUntil(
    () =>
      jetstream(nc)
        .publish(subject, data, { timeout: 1_000 })
        .then(
          () => true,
          () => undefined,
        ),
    "a publish to succeed",
  );
}

test.skipIf(!binary)("the consumer survives a NATS restart and consumes what comes after it", async () => {
  const config = testConfig();
  const nc = await connect({ servers: broker.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const link = createNatsLink(Promise.resolve(nc), silentLogger);
  const health: ConsumerHealth = { bound: {} };
  const consumer = createEventConsumer({
    sql,
    log: silentLogger,
    now: systemClock,
    metrics: testMetrics().metrics,
    link,
    ...consumerOf(config),
    batchSize: 10,
    health,
    onCreated: () => {},
  });
  const stop = new AbortController();
  const running = consumer.run(stop.signal);
  const count = async (userId: string) =>
    (await sql<{ n: number }[]>`select count(*)::int as n from notifications where user_id = ${userId}`)[0]?.n ?? 0;
  try {
    await waitUntil(
      async () => (health.bound.entitlement && link.connected() ? true : undefined),
      "the consumer to bind",
    );
    await publishWhenUp(nc, config.nats.subject, eventBytes({ userId: "before-outage" }));
    await waitUntil(async () => ((await count("before-outage")) === 1 ? true : undefined), "the first event");

    await broker.stop();
    await waitUntil(async () => (link.connected() ? undefined : true), "the link to notice the outage");
    await broker.start();

    await publishWhenUp(nc, config.nats.subject, eventBytes({ userId: "after-outage" }));
    await waitUntil(
      async () => ((await count("after-outage")) === 1 ? true : undefined),
      "the event after the restart",
    );
    expect(await count("before-outage")).toBe(1);
    await waitUntil(
      async () => (health.bound.entitlement && link.connected() ? true : undefined),
      "readiness to come back",
    );
  } finally {
    stop.abort();
    await running;
    await nc.close();
  }
});
