// Web Push and FCM as the real services check them: every push decrypted with the subscription's private key and its
// VAPID JWT verified by the Web Push stand-in; the service account's assertion and the bearer token verified by the
// FCM stand-in. The answers each push service can give map to one result each (sent, gone, retry, failed).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import webpush from "web-push";
import { parseServiceAccount } from "../../src/notification/features/push/service-account.ts";
import { createFcmSender } from "../../src/notification/work/push/fcm.ts";
import { createFcmAccessTokens } from "../../src/notification/work/push/fcm-auth.ts";
import { MAX_ENCRYPTED_BYTES, type PushNotification, topicOf } from "../../src/notification/work/push/payload.ts";
import { createWebPushSender } from "../../src/notification/work/push/webpush.ts";
import { type FcmService, startFcmService } from "../support/fcm-service.ts";
import { startWebPushService, type WebPushService } from "../support/webpush-service.ts";

const vapidKeys = webpush.generateVAPIDKeys();
const vapid = { ...vapidKeys, subject: "mailto:ops@example.com" };
const DAY_S = 86_400;

let service: WebPushService;
let fcm: FcmService;
beforeAll(async () => {
  service = startWebPushService();
  fcm = await startFcmService();
});
afterAll(() => {
  service.stop();
  fcm.stop();
});

const notification = (payload: Record<string, unknown> = {}, seq = 1): PushNotification => ({
  notificationId: crypto.randomUUID(),
  seq,
  type: "EnergyFull",
  payload: {
    type: "EnergyFull",
    user_id: "p1",
    data: { energy: 100 },
    title: "Energy full",
    body: "Come back and play",
    collapse_key: null,
    expires_at: null,
    request_id: "r1",
    ...payload,
  },
});

const sender = (over: Partial<Parameters<typeof createWebPushSender>[0]> = {}) =>
  createWebPushSender({
    vapid,
    now: () => new Date(),
    defaultTtlSeconds: DAY_S,
    timeoutMs: 2_000,
    allowPrivate: true,
    ...over,
  });

describe("Web Push", () => {
  test("a push decrypts with the subscription's key into the notification, under a valid VAPID JWT", async () => {
    const sub = service.subscribe();
    const n = notification({ collapse_key: "energy" }, 7);
    expect(await sender()(sub.json, n)).toEqual({ outcome: "sent", statusCode: 201 });
    const got = service.received.find((r) => r.subscriptionId === sub.id);
    expect(service.refused).toEqual([]);
    expect(got?.message, "the decrypted payload is the notification as a device shows it").toEqual({
      notification_id: n.notificationId,
      seq: 7,
      type: "EnergyFull",
      title: "Energy full",
      body: "Come back and play",
      data: { energy: 100 },
    });
    expect(got?.claims.aud, "the JWT's audience is the push service's origin").toBe(service.origin);
    expect(got?.claims.sub).toBe(vapid.subject);
    expect(got?.ttl, "without expires_at the TTL is the default").toBe(String(DAY_S));
    expect(got?.topic, "the collapse key becomes a Topic of the URL-safe alphabet").toBe(topicOf("energy"));
    expect(got?.topic).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
    expect(got?.urgency).toBe("normal");
  });

  test("TTL counts down to expires_at", async () => {
    const sub = service.subscribe();
    const now = new Date();
    const expires = new Date(now.getTime() + 90_000).toISOString();
    await sender({ now: () => now })(sub.json, notification({ expires_at: expires }));
    const got = service.received.find((r) => r.subscriptionId === sub.id);
    expect(got?.ttl).toBe("90");
  });

  test("a payload too large for 4 KiB encrypted is sent without its data", async () => {
    const sub = service.subscribe();
    const n = notification({ data: { blob: "x".repeat(6_000) } });
    expect((await sender()(sub.json, n)).outcome).toBe("sent");
    const got = service.received.find((r) => r.subscriptionId === sub.id);
    expect(got?.bodyBytes).toBeLessThanOrEqual(MAX_ENCRYPTED_BYTES);
    expect(got?.message.data, "data is what gives way").toBeNull();
    expect(got?.message.title).toBe("Energy full");
  });

  test("each answer of the push service maps to one result", async () => {
    const cases = [
      [{ status: 410 }, { outcome: "gone", statusCode: 410 }],
      [{ status: 404 }, { outcome: "gone", statusCode: 404 }],
      [
        { status: 429, retryAfter: "7" },
        { outcome: "retry", statusCode: 429, retryAfterMs: 7_000 },
      ],
      [{ status: 503 }, { outcome: "retry", statusCode: 503, retryAfterMs: null }],
      [{ status: 413 }, { outcome: "failed", statusCode: 413 }],
    ] as const;
    for (const [answer, expected] of cases) {
      const sub = service.subscribe();
      service.answer(sub.id, answer);
      expect(await sender()(sub.json, notification())).toMatchObject(expected);
    }
  });

  test("the stand-in refuses a push encrypted for another subscription's keys", async () => {
    const [a, b] = [service.subscribe(), service.subscribe()];
    const refusedBefore = service.refused.length;
    const crossed = { ...a.json, keys: b.json.keys };
    expect(await sender()(crossed, notification())).toMatchObject({ outcome: "failed", statusCode: 400 });
    expect(service.refused.length - refusedBefore, "a push the browser could not decrypt is refused").toBe(1);
  });

  test("a push service that never answers is a retry after the timeout", async () => {
    const sub = service.subscribe();
    service.answer(sub.id, "hang");
    const result = await sender({ timeoutMs: 300 })(sub.json, notification());
    expect(result).toMatchObject({ outcome: "retry", statusCode: null });
  });

  test("the endpoint guard refuses http, private hosts and a name that now resolves to one, at each push", async () => {
    const sub = service.subscribe();
    const strict = sender({ allowPrivate: false });
    expect(await strict(sub.json, notification())).toMatchObject({
      outcome: "failed",
      error: expect.stringMatching(/https/),
    });
    const loopback = { ...sub.json, endpoint: sub.json.endpoint.replace("http:", "https:") };
    expect(await strict(loopback, notification())).toMatchObject({
      outcome: "failed",
      error: expect.stringMatching(/may not reach/),
    });
    let answer = "93.184.215.14";
    const rebinding = sender({
      allowPrivate: false,
      timeoutMs: 300,
      resolve: async () => [{ address: answer, family: 4 }],
    });
    const named = { ...sub.json, endpoint: "https://push.example.test/push/x" };
    answer = "10.1.2.3";
    expect(await rebinding(named, notification())).toMatchObject({
      outcome: "failed",
      error: expect.stringMatching(/10\.1\.2\.3/),
    });
    expect(service.requests.get(sub.id) ?? 0, "no refused push reached the service").toBe(0);
  });
});

describe("FCM", () => {
  const fcmSender = (now: () => Date = () => new Date(), baseUrl = fcm.url) => {
    const account = parseServiceAccount(fcm.serviceAccountJson);
    const tokens = createFcmAccessTokens({ account, now, timeoutMs: 2_000 });
    return createFcmSender({
      projectId: account.projectId,
      baseUrl,
      tokens,
      now,
      defaultTtlSeconds: DAY_S,
      timeoutMs: 2_000,
    });
  };

  test("a message carries the notification, data strings, collapse keys and ttl; the token is reused", async () => {
    const grantsBefore = fcm.grants;
    const send = fcmSender();
    const device = fcm.register();
    const n = notification({ collapse_key: "energy" }, 3);
    expect(await send(device, n)).toEqual({ outcome: "sent", statusCode: 200 });
    expect(await send(device, notification({}, 4))).toMatchObject({ outcome: "sent" });
    expect(fcm.refused).toEqual([]);
    expect(fcm.grants - grantsBefore, "one access token serves every push until it nears its end").toBe(1);
    const message = fcm.received.find((r) => r.message.data.notification_id === n.notificationId)?.message;
    expect(message).toEqual({
      token: device,
      notification: { title: "Energy full", body: "Come back and play" },
      data: { notification_id: n.notificationId, seq: "3", type: "EnergyFull", payload: '{"energy":100}' },
      android: { ttl: `${DAY_S}s`, collapse_key: "energy" },
      apns: { headers: { "apns-collapse-id": "energy", "apns-expiration": expect.stringMatching(/^\d+$/) } },
    });
  });

  test("a token near its end is fetched again", async () => {
    let now = new Date();
    const send = fcmSender(() => now);
    const device = fcm.register();
    const grantsBefore = fcm.grants;
    await send(device, notification());
    now = new Date(now.getTime() + 3_550_000);
    await send(device, notification());
    expect(fcm.grants - grantsBefore).toBe(2);
  });

  test("a refused access token is a retry, and the next push fetches a new one", async () => {
    const send = fcmSender();
    const device = fcm.register();
    await send(device, notification());
    fcm.revokeTokens();
    const grantsBefore = fcm.grants;
    expect(await send(device, notification())).toMatchObject({ outcome: "retry", statusCode: 401 });
    expect(await send(device, notification())).toMatchObject({ outcome: "sent" });
    expect(fcm.grants - grantsBefore).toBe(1);
  });

  test("UNREGISTERED is gone; 429 retries after Retry-After; another refusal fails the push only", async () => {
    const send = fcmSender();
    expect(await send("never-registered", notification())).toMatchObject({ outcome: "gone", statusCode: 404 });
    const busy = fcm.register();
    fcm.answer(busy, { status: 429, errorCode: "QUOTA_EXCEEDED", retryAfter: "30" });
    expect(await send(busy, notification())).toMatchObject({ outcome: "retry", retryAfterMs: 30_000 });
    const wrong = fcm.register();
    fcm.answer(wrong, { status: 403, errorCode: "SENDER_ID_MISMATCH" });
    expect(await send(wrong, notification())).toMatchObject({ outcome: "failed", statusCode: 403 });
  });

  test("a 404 that is not FCM's answer (a wrong base URL) fails the push but does not call the device gone", async () => {
    const send = fcmSender(undefined, `${fcm.url}/not-fcm`);
    const device = fcm.register();
    expect(await send(device, notification())).toMatchObject({ outcome: "failed", statusCode: 404 });
  });
});
