import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { createWebhookSender } from "../../src/notification/work/channels/webhook.ts";
import type { DeliveryDeps } from "../../src/notification/work/delivery/deps.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { useTestDatabase } from "../support/infra.ts";
import { deliverBatch } from "./delivery.helpers.ts";
import { notificationRow, seedNotification, testConfig, testMetrics } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_webhook", { service: "notification", resetEach: true });

const SECRET = `whsec_${Buffer.from("a-test-secret-of-32-bytes-length").toString("base64")}`;

type Received = { body: string; headers: Record<string, string> };
let received: Received[] = [];
let answer: () => Response | Promise<Response> = () => new Response(null, { status: 204 });
let server: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (request) => {
      received.push({ body: await request.text(), headers: Object.fromEntries(request.headers) });
      return answer();
    },
  });
});
afterAll(async () => {
  server.stop(true);
});
beforeEach(async () => {
  received = [];
  answer = () => new Response(null, { status: 204 });
});

function deps(timeoutMs = 5_000): DeliveryDeps {
  const config = testConfig({
    NOTIFICATION_DELIVERY_CHANNEL: "webhook",
    NOTIFICATION_WEBHOOK_URL: `http://127.0.0.1:${server.port}/hook`,
    NOTIFICATION_WEBHOOK_SECRET: SECRET,
    NOTIFICATION_DELIVERY_MAX_ATTEMPTS: "3",
  }).delivery;
  return {
    sql: f.sql,
    log: silentLogger,
    now: () => new Date(),
    metrics: testMetrics().metrics,
    send: createWebhookSender({ url: config.webhook.url ?? "", secret: SECRET, timeoutMs, now: () => new Date() }),
    workerId: "worker-a",
    batchSize: 10,
    maxAttempts: config.maxAttempts,
    leaseMs: 30_000,
    errorMessageMaxLength: 1000,
    backoff: config.backoff,
  };
}
const dlqCount = async (id: string) =>
  (await f.sql<{ n: number }[]>`select count(*)::int as n from notification_dlq where notification_id = ${id}`)[0]?.n;

describe("webhook channel", () => {
  test("2xx: the receiver sees a valid Standard Webhooks signature and the notification is SENT", async () => {
    const id = await seedNotification(f.sql, { createdAt: new Date(Date.now() - 1000), userId: "u_hook" });
    await deliverBatch(deps());
    expect(received.length).toBe(1);
    const [hit] = received;
    expect(hit?.headers["webhook-id"]).toBe(id);
    expect(hit?.headers["content-type"]).toBe("application/json");
    const verified = new Webhook(SECRET).verify(hit?.body ?? "", hit?.headers ?? {});
    expect(verified).toMatchObject({ notification_id: id, user_id: "u_hook", type: "EntitlementGranted" });
    expect(() => new Webhook(SECRET).verify(`${hit?.body} `, hit?.headers ?? {})).toThrow();
    expect((await notificationRow(f.sql, id)).status).toBe("SENT");
  });

  test("410 Gone is permanent: FAILED and DLQ at once", async () => {
    answer = () => new Response("gone", { status: 410 });
    const id = await seedNotification(f.sql, { createdAt: new Date(Date.now() - 1000) });
    await deliverBatch(deps());
    expect(await notificationRow(f.sql, id)).toMatchObject({ status: "FAILED", attempt_count: 1 });
    expect(await dlqCount(id)).toBe(1);
  });

  test("500 is retried", async () => {
    answer = () => new Response("oops", { status: 500 });
    const id = await seedNotification(f.sql, { createdAt: new Date(Date.now() - 1000) });
    await deliverBatch(deps());
    expect(await notificationRow(f.sql, id)).toMatchObject({
      status: "PENDING",
      attempt_count: 1,
      last_error: "webhook answered 500",
    });
    expect(await dlqCount(id)).toBe(0);
  });

  test("a timeout is retried", async () => {
    answer = () => Bun.sleep(2_000).then(() => new Response(null, { status: 204 }));
    const id = await seedNotification(f.sql, { createdAt: new Date(Date.now() - 1000) });
    await deliverBatch(deps(100));
    expect(await notificationRow(f.sql, id)).toMatchObject({
      status: "PENDING",
      attempt_count: 1,
      last_error: "webhook timed out after 100ms",
    });
  });

  test("a refused connection is retried", async () => {
    const id = await seedNotification(f.sql, { createdAt: new Date(Date.now() - 1000) });
    const d = deps();
    d.send = createWebhookSender({
      url: "http://127.0.0.1:1/hook",
      secret: SECRET,
      timeoutMs: 2000,
      now: () => new Date(),
    });
    await deliverBatch(d);
    expect(await notificationRow(f.sql, id)).toMatchObject({ status: "PENDING", last_error: "webhook request failed" });
  });
});
