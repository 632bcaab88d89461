// Delivery of pushes: every stored notification reaches each of its player's devices once (Web Push decrypted by the
// stand-in, FCM verified by its stand-in), unless the player turned push off for everything or for its type, or it
// expired; a device its push service calls gone is deleted; 429/5xx retry after Retry-After; a hanging push service
// delays no other's pushes. The inbox is never filtered.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import webpush from "web-push";
import { upsertDevice, writePreferences } from "../../src/notification/features/push/queries.ts";
import { parseServiceAccount } from "../../src/notification/features/push/service-account.ts";
import { storeEvents } from "../../src/notification/intake/consumer/batch.ts";
import { createFcmSender } from "../../src/notification/work/push/fcm.ts";
import { createFcmAccessTokens } from "../../src/notification/work/push/fcm-auth.ts";
import { createWebPushSender } from "../../src/notification/work/push/webpush.ts";
import { createPushWorker } from "../../src/notification/work/push/worker.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { type FcmService, startFcmService } from "../support/fcm-service.ts";
import { uniqueName, useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { startWebPushService, type WebPushService } from "../support/webpush-service.ts";
import { testMetrics } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("push_delivery", { service: "notification" });
let healthy: WebPushService;
let hanging: WebPushService;
let fcm: FcmService;
const { registry, metrics } = testMetrics();
const waker = new Waker();
const stop = new AbortController();
let running: Promise<void>;
const now = () => new Date();

beforeAll(async () => {
  healthy = startWebPushService();
  hanging = startWebPushService();
  fcm = await startFcmService();
  const account = parseServiceAccount(fcm.serviceAccountJson);
  const common = { now, defaultTtlSeconds: 3600, timeoutMs: 4_000 };
  const worker = createPushWorker({
    sql: f.sql,
    log: silentLogger,
    metrics,
    workerId: uniqueName("push"),
    waker,
    leaseMs: 30_000,
    maxInFlight: 100,
    perService: 4,
    pollIntervalMs: 200,
    idlePollMs: 1_000,
    now,
    maxAttempts: 5,
    backoff: { baseMs: 200, maxMs: 1_000, minMs: 100, exponentBase: 2, jitterMin: 1, jitterMax: 1 },
    errorMessageMaxLength: 500,
    senders: {
      webpush: createWebPushSender({
        ...common,
        vapid: { ...webpush.generateVAPIDKeys(), subject: "mailto:o@example.com" },
        allowPrivate: true,
      }),
      fcm: createFcmSender({
        ...common,
        projectId: account.projectId,
        baseUrl: fcm.url,
        tokens: createFcmAccessTokens({ account, now, timeoutMs: 4_000 }),
      }),
    },
  });
  running = worker.run(stop.signal);
});
afterAll(async () => {
  stop.abort();
  await running;
  healthy.stop();
  hanging.stop();
  fcm.stop();
});

async function webDevice(user: string, service = healthy) {
  const sub = service.subscribe();
  const { p256dh, auth } = sub.json.keys;
  const device = { platform: "webpush" as const, endpoint: sub.json.endpoint, p256dh, auth };
  const row = await upsertDevice(f.sql, { deviceId: crypto.randomUUID(), userId: user, device, now: now() });
  return { sub, deviceId: row.device_id };
}

async function fcmDevice(user: string) {
  const token = fcm.register();
  const row = await upsertDevice(f.sql, {
    deviceId: crypto.randomUUID(),
    userId: user,
    device: { platform: "fcm", token },
    now: now(),
  });
  return { token, deviceId: row.device_id };
}

async function store(user: string, type = "EnergyFull", payload: Record<string, unknown> = {}) {
  const eventId = crypto.randomUUID();
  const notification = {
    userId: user,
    type,
    occurredAt: now().toISOString(),
    payload: { user_id: user, ...payload },
  } as never;
  await storeEvents(f.sql, [{ eventId, notifications: [notification] }], now());
  waker.wake();
  const [row] = await f.sql<
    { notification_id: string }[]
  >`select notification_id from notifications where event_id = ${eventId}`;
  return (row as { notification_id: string }).notification_id;
}

const statusOf = async (notificationId: string) =>
  (await f.sql<{ status: string }[]>`select status from push_deliveries where notification_id = ${notificationId}`).map(
    (r) => r.status,
  );

const counted = async (platform: string, outcome: string) =>
  ((await registry.getSingleMetric("notification_pushes_total")?.get())?.values ?? []).find(
    (v) => v.labels.platform === platform && v.labels.outcome === outcome,
  )?.value ?? 0;

describe("push delivery", () => {
  test("each device of the player gets the notification once: Web Push decrypted, FCM verified", async () => {
    const user = uniqueName("p");
    const web = await webDevice(user);
    const phone = await fcmDevice(user);
    const id = await store(user);
    await waitUntil(
      async () => (await statusOf(id)).every((s) => s === "SENT") && (await statusOf(id)).length === 2,
      "both pushes SENT",
    );
    const pushes = healthy.received.filter((r) => r.subscriptionId === web.sub.id);
    expect(
      pushes.map((p) => p.message.notification_id),
      "exactly once to the browser",
    ).toEqual([id]);
    expect(
      fcm.received.filter((r) => r.message.token === phone.token).map((r) => r.message.data.notification_id),
    ).toEqual([id]);
    const [device] = await f.sql<
      { last_success_at: Date | null }[]
    >`select last_success_at from player_devices where device_id = ${web.deviceId}`;
    expect(device?.last_success_at).not.toBeNull();
    expect(await counted("webpush", "sent")).toBeGreaterThanOrEqual(1);
  });

  test("preferences: push off for a type skips it, off for everything skips all; the inbox keeps every one", async () => {
    const user = uniqueName("p");
    const web = await webDevice(user);
    await writePreferences(f.sql, {
      userId: user,
      preferences: { push: true, types: { MatchFound: { push: false } } },
      now: now(),
    });
    const muted = await store(user, "MatchFound");
    const wanted = await store(user, "EnergyFull");
    await waitUntil(async () => (await statusOf(wanted))[0] === "SENT", "the wanted type pushed");
    expect(await statusOf(muted), "a type turned off gets no push").toEqual([]);
    await writePreferences(f.sql, { userId: user, preferences: { push: false, types: {} }, now: now() });
    const off = await store(user, "EnergyFull");
    expect(await statusOf(off)).toEqual([]);
    expect(
      healthy.received.filter((r) => r.subscriptionId === web.sub.id).map((r) => r.message.notification_id),
    ).toEqual([wanted]);
    const [inbox] = await f.sql<{ n: number }[]>`select count(*)::int as n from notifications where user_id = ${user}`;
    expect(inbox?.n, "the inbox is not filtered").toBe(3);
  });

  test("an expired notification is not pushed and is counted expired", async () => {
    const user = uniqueName("p");
    await webDevice(user);
    const before = await counted("webpush", "expired");
    const id = await store(user, "EnergyFull", { expires_at: new Date(Date.now() - 1000).toISOString() });
    await waitUntil(async () => (await statusOf(id))[0] === "EXPIRED", "the push EXPIRED");
    expect(await counted("webpush", "expired")).toBe(before + 1);
  });

  test("a device the push service calls gone is deleted; UNREGISTERED too", async () => {
    const user = uniqueName("p");
    const web = await webDevice(user);
    healthy.answer(web.sub.id, { status: 410 });
    const phone = await upsertDevice(f.sql, {
      deviceId: crypto.randomUUID(),
      userId: user,
      device: { platform: "fcm", token: "uninstalled" },
      now: now(),
    });
    await store(user);
    await waitUntil(
      async () =>
        (await f.sql`select 1 from player_devices where device_id in (${web.deviceId}, ${phone.device_id})`).length ===
        0,
      "both gone devices deleted",
    );
  });

  test("429 and 5xx retry after Retry-After, then succeed", async () => {
    const user = uniqueName("p");
    const web = await webDevice(user);
    healthy.answer(web.sub.id, { status: 429, retryAfter: "2" });
    const id = await store(user);
    await waitUntil(async () => (healthy.requests.get(web.sub.id) ?? 0) >= 1, "the first attempt");
    await waitUntil(async () => (await statusOf(id))[0] === "PENDING", "retry scheduled");
    const [row] = await f.sql<{ last_status_code: number; wait_ms: number }[]>`
      select last_status_code, (extract(epoch from next_attempt_at - now()) * 1000)::float8 as wait_ms
      from push_deliveries where notification_id = ${id}`;
    expect(row?.last_status_code).toBe(429);
    expect(row?.wait_ms, "Retry-After: 2 beats the 200 ms backoff").toBeGreaterThan(1_000);
    healthy.answer(web.sub.id, { status: 201 });
    const started = Date.now();
    await waitUntil(async () => (await statusOf(id))[0] === "SENT", "sent after the retry");
    const [after] = await f.sql<
      { attempt_count: number }[]
    >`select attempt_count from push_deliveries where notification_id = ${id}`;
    expect(after?.attempt_count).toBe(2);
    expect(Date.now() - started + 200, "not before Retry-After").toBeGreaterThanOrEqual(1_000);
  });

  test("a push service that hangs delays no other's pushes", async () => {
    const stuck = uniqueName("stuck");
    for (let i = 0; i < 6; i++) {
      const d = await webDevice(stuck, hanging);
      hanging.answer(d.sub.id, "hang");
    }
    for (let i = 0; i < 5; i++) await store(stuck);
    await waitUntil(() => hanging.requests.size >= 4 || undefined, "the hanging service holds its slots");
    const user = uniqueName("p");
    await webDevice(user);
    const started = performance.now();
    const id = await store(user);
    await waitUntil(() => healthy.received.some((r) => r.message.notification_id === id), "the healthy push");
    expect(performance.now() - started, "well within the hanging requests' timeout").toBeLessThan(2_000);
  });
});
