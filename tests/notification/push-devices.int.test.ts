// A player's devices and push preferences under /v1/me/, with their own access token: a Web Push subscription as a
// browser's PushSubscription.toJSON() gives it, or an FCM registration token; the same one twice is one device; ten at
// most (an eleventh replaces the oldest); keys and tokens never come back; another player's device is a 404; a platform
// that is not configured is refused; preferences are everything-on until replaced.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createPlayers } from "../../src/notification/features/players/setup.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { systemClock } from "../../src/shared/runtime.ts";
import { startTestIdp, type TestIdp } from "../support/idp.ts";
import { uniqueName, useTestDatabase } from "../support/infra.ts";
import { startWebPushService, type WebPushService } from "../support/webpush-service.ts";
import { type NotificationApp, notificationApp } from "./app.helpers.ts";
import { testMetrics } from "./helpers.ts";
import { playerConfig, playerToken } from "./players/harness.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("push_devices", { service: "notification" });
let idp: TestIdp;
let pushService: WebPushService;
let app: NotificationApp;
let fcmOff: NotificationApp;

function build(configured: { webpush: boolean; fcm: boolean }, allowPrivate = true) {
  const config = playerConfig(idp);
  const players = createPlayers({
    config: { players: config.players, workerId: uniqueName("w") },
    sql: f.sql,
    log: silentLogger,
    registry: testMetrics().registry,
    now: systemClock,
    link: undefined,
  });
  const routes = players.routes as NonNullable<typeof players.routes>;
  return notificationApp(f.sql, {
    players: routes,
    push: { sql: f.sql, now: systemClock, configured, allowPrivate, authenticate: routes.authenticate },
  });
}

async function call(target: NotificationApp, path: string, init: { user?: string; method?: string; body?: unknown }) {
  const headers: Record<string, string> = {};
  if (init.user) headers.authorization = `Bearer ${await playerToken(idp, init.user)}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const response = await target.handle(
    new Request(`http://localhost${path}`, {
      method: init.method ?? "GET",
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    }),
  );
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
}

const register = (user: string, body: unknown, target = app) =>
  call(target, "/v1/me/devices", { user, method: "POST", body });
const devices = async (user: string) =>
  (await call(app, "/v1/me/devices", { user })).body.devices as { device_id: string; platform: string }[];

beforeAll(async () => {
  idp = await startTestIdp();
  pushService = startWebPushService();
  app = build({ webpush: true, fcm: true });
  fcmOff = build({ webpush: true, fcm: false });
});
afterAll(async () => {
  pushService?.stop();
  await idp?.close();
});

describe("devices", () => {
  test("without a token: 401", async () => {
    expect((await call(app, "/v1/me/devices", {})).status).toBe(401);
  });

  test("a subscription registers once: 201, then 200 with the same device; listed without keys", async () => {
    const user = uniqueName("p");
    const sub = pushService.subscribe();
    const first = await register(user, { platform: "webpush", subscription: sub.json });
    expect(first.status).toBe(201);
    expect(Object.keys(first.body).sort()).toEqual(["created_at", "device_id", "platform"]);
    const again = await register(user, { platform: "webpush", subscription: sub.json });
    expect(again.status, "the same subscription again is the same device").toBe(200);
    expect(again.body.device_id).toBe(first.body.device_id);
    const listed = await call(app, "/v1/me/devices", { user });
    expect(listed.body).toEqual({
      devices: [
        {
          device_id: first.body.device_id,
          platform: "webpush",
          created_at: first.body.created_at,
          last_success_at: null,
        },
      ],
    });
    expect(JSON.stringify(listed.body)).not.toContain(sub.json.keys.auth);
  });

  test("an FCM token registers once; the eleventh device replaces the oldest", async () => {
    const user = uniqueName("p");
    const ids: string[] = [];
    for (let i = 0; i < 11; i++) {
      const answer = await register(user, { platform: "fcm", token: `token-${user}-${i}` });
      expect(answer.status).toBe(201);
      ids.push(answer.body.device_id as string);
    }
    const again = await register(user, { platform: "fcm", token: `token-${user}-10` });
    expect(again.status).toBe(200);
    const listed = (await devices(user)).map((d) => d.device_id);
    expect(listed.length, "ten devices at most").toBe(10);
    expect(listed, "the oldest went").not.toContain(ids[0] as string);
    expect(listed).toContain(ids[10] as string);
  });

  test("a device registered by another player moves to them", async () => {
    const [a, b] = [uniqueName("a"), uniqueName("b")];
    const token = `token-${a}`;
    await register(a, { platform: "fcm", token });
    expect((await register(b, { platform: "fcm", token })).status).toBe(201);
    expect(await devices(a), "the previous player's pushes stop reaching it").toEqual([]);
    expect((await devices(b)).length).toBe(1);
  });

  test("delete: 204 for mine, 404 for another player's or an unknown id", async () => {
    const [a, b] = [uniqueName("a"), uniqueName("b")];
    const id = (await register(a, { platform: "fcm", token: `t-${a}` })).body.device_id as string;
    expect((await call(app, `/v1/me/devices/${id}`, { user: b, method: "DELETE" })).status).toBe(404);
    expect((await call(app, "/v1/me/devices/not-a-uuid", { user: a, method: "DELETE" })).status).toBe(404);
    expect((await call(app, `/v1/me/devices/${id}`, { user: a, method: "DELETE" })).status).toBe(204);
    expect(await devices(a)).toEqual([]);
  });

  test("refusals name the field and the rule", async () => {
    const user = uniqueName("p");
    const sub = pushService.subscribe().json;
    const cases: [unknown, string, RegExp][] = [
      [{ platform: "apns", token: "x" }, "BAD_REQUEST", /platform/],
      [{ platform: "fcm" }, "BAD_REQUEST", /token/],
      [
        { platform: "webpush", subscription: { ...sub, keys: { ...sub.keys, p256dh: "AAAA" } } },
        "BAD_REQUEST",
        /p256dh/,
      ],
      [{ platform: "webpush", subscription: { ...sub, keys: { ...sub.keys, auth: "" } } }, "BAD_REQUEST", /auth/],
      [{ platform: "webpush", subscription: { ...sub, endpoint: "ftp://x" } }, "ENDPOINT_URL_NOT_ALLOWED", /http/],
    ];
    for (const [body, code, message] of cases) {
      const answer = await register(user, body);
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe(code);
      expect(answer.body.message).toMatch(message);
    }
    expect((await register(user, { platform: "fcm", token: "t" }, fcmOff)).body.code).toBe("PLATFORM_NOT_CONFIGURED");
  });

  test("the endpoint guard: http and private hosts are refused unless private addresses are allowed", async () => {
    const strict = build({ webpush: true, fcm: true }, false);
    const user = uniqueName("p");
    const sub = pushService.subscribe().json;
    const http = await register(user, { platform: "webpush", subscription: sub }, strict);
    expect(http.body.code).toBe("ENDPOINT_URL_NOT_ALLOWED");
    const local = { ...sub, endpoint: sub.endpoint.replace("http:", "https:") };
    const refused = await register(user, { platform: "webpush", subscription: local }, strict);
    expect(refused.body).toMatchObject({
      code: "ENDPOINT_URL_NOT_ALLOWED",
      message: expect.stringMatching(/127\.0\.0\.1/),
    });
  });
});

describe("preferences", () => {
  test("everything on until replaced; PUT replaces and GET reads what was stored", async () => {
    const user = uniqueName("p");
    expect((await call(app, "/v1/me/preferences", { user })).body).toEqual({ push: true, types: {} });
    const wanted = { push: true, types: { MatchFound: { push: false } } };
    const put = await call(app, "/v1/me/preferences", { user, method: "PUT", body: wanted });
    expect(put).toEqual({ status: 200, body: wanted });
    expect((await call(app, "/v1/me/preferences", { user })).body).toEqual(wanted);
    const off = { push: false, types: {} };
    await call(app, "/v1/me/preferences", { user, method: "PUT", body: off });
    expect((await call(app, "/v1/me/preferences", { user })).body, "a PUT replaces, it does not merge").toEqual(off);
  });

  test("refusals: a bad type name, a non-boolean, more than 200 types", async () => {
    const user = uniqueName("p");
    const many = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`T${i}`, { push: true }]));
    const cases: [unknown, RegExp][] = [
      [{ push: "yes", types: {} }, /push/],
      [{ push: true, types: { "1bad": { push: true } } }, /type/],
      [{ push: true, types: { Good: { push: 1 } } }, /types\.Good\.push/],
      [{ push: true, types: many }, /200/],
    ];
    for (const [body, message] of cases) {
      const answer = await call(app, "/v1/me/preferences", { user, method: "PUT", body });
      expect(answer.status).toBe(400);
      expect(answer.body.message).toMatch(message);
    }
  });
});
