// A NATS outage on a private nats-server (the shared one is never touched): the consumer survives a server restart
// and goes on consuming. Skipped when no nats-server binary is installed.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type ConsumerHealth, createEventConsumer } from "../../src/notification/consumer/worker.ts";
import { createNatsLink } from "../../src/notification/nats/link.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { systemClock } from "../../src/shared/runtime.ts";
import { createTestDatabase, type TestDatabase } from "../support/infra.ts";
import { eventBytes, notificationSql, testConfig, testMetrics, waitFor } from "./helpers.ts";

setDefaultTimeout(120_000);

const binary = Bun.which("nats-server");
let db: TestDatabase;
let sql: Sql;
let store: string;
let port: number;
let server: ReturnType<typeof Bun.spawn> | undefined;

function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const p = probe.port;
  probe.stop(true);
  return p;
}

async function startServer(): Promise<void> {
  server = Bun.spawn([binary ?? "nats-server", "-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store], {
    stdout: "ignore",
    stderr: "ignore",
  });
  await waitFor(async () => {
    const nc = await connect({ servers: `127.0.0.1:${port}`, timeout: 500 }).catch(() => undefined);
    await nc?.close();
    return nc ? true : undefined;
  }, "the private nats-server");
}

async function stopServer(): Promise<void> {
  server?.kill("SIGTERM");
  await server?.exited;
  server = undefined;
}

beforeAll(async () => {
  if (!binary) return;
  db = await createTestDatabase("notif_outage");
  sql = notificationSql(db.url);
  store = mkdtempSync(join(tmpdir(), "notif-outage-"));
  port = freePort();
  await startServer();
});
afterAll(async () => {
  if (!binary) return;
  await stopServer();
  rmSync(store, { recursive: true, force: true });
  await sql.end();
  await db.drop();
});

async function publishWhenUp(nc: NatsConnection, subject: string, data: Uint8Array): Promise<void> {
  await waitFor(
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
  const nc = await connect({ servers: `127.0.0.1:${port}`, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const link = createNatsLink(Promise.resolve(nc), silentLogger);
  const health: ConsumerHealth = { bound: false };
  const consumer = createEventConsumer({
    sql,
    log: silentLogger,
    clock: systemClock,
    metrics: testMetrics().metrics,
    link,
    nats: config.nats,
    batchSize: 10,
    health,
    onCreated: () => {},
  });
  const stop = new AbortController();
  const running = consumer.run(stop.signal);
  const count = async (userId: string) =>
    (await sql<{ n: number }[]>`select count(*)::int as n from notifications where user_id = ${userId}`)[0]?.n ?? 0;
  try {
    await waitFor(async () => (health.bound && link.connected() ? true : undefined), "the consumer to bind");
    await publishWhenUp(nc, config.nats.subject, eventBytes({ userId: "before-outage" }));
    await waitFor(async () => ((await count("before-outage")) === 1 ? true : undefined), "the first event");

    await stopServer();
    await waitFor(async () => (link.connected() ? undefined : true), "the link to notice the outage");
    await startServer();

    await publishWhenUp(nc, config.nats.subject, eventBytes({ userId: "after-outage" }));
    await waitFor(async () => ((await count("after-outage")) === 1 ? true : undefined), "the event after the restart");
    expect(await count("before-outage")).toBe(1);
    await waitFor(async () => (health.bound && link.connected() ? true : undefined), "readiness to come back");
  } finally {
    stop.abort();
    await running;
    await nc.close();
  }
});
