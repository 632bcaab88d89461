// Push to players' devices against the compiled Notification executable, started once with Web Push and FCM on (each
// against its stand-in: the Web Push one decrypts every push with the subscription's private key and checks its VAPID
// JWT; the FCM one checks the service account's assertion and the bearer token): a player registers, lists and
// deletes their devices and sets their preferences with their own token; every notification, from the send API or
// from an event, is pushed to each device unless the player turned push off (decided when the push goes out) or it
// expired; the push services' answers delete, retry or fail; and no key or token reaches the logs.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import webpush from "web-push";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { eventBytes } from "../notification/helpers.ts";
import { type FcmService, startFcmService } from "../support/fcm-service.ts";
import { startTestIdp, type TestIdp } from "../support/idp.ts";
import { natsUrl, uniqueName } from "../support/infra.ts";
import { deletePipelineStreams, pipelineNatsNames } from "../support/nats-names.ts";
import { runCommand } from "../support/process.ts";
import { waitUntil } from "../support/wait.ts";
import { type BrowserSubscription, startWebPushService, type WebPushService } from "../support/webpush-service.ts";
import { builtBinary, emptyDatabase, freePort, repoRoot, waitForOk } from "./support.ts";

const BUILD_TIMEOUT = 240_000;
setDefaultTimeout(60_000);
const AUDIENCE = "https://game.test";
const GAME = "game-token-0123456789abcdef";
const LISTED_ORIGIN = "http://play.example.test";
const SUBJECT = "mailto:ops@example.test";
const DEFAULT_TTL_S = 7200;
const stream = uniqueName("push").replaceAll("_", "-");
const bareStream = `${stream}-bare`;
const vapid = webpush.generateVAPIDKeys();

let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;
let sql: postgres.Sql;
let idp: TestIdp;
let web: WebPushService;
let fcm: FcmService;
let folder = "";
const children: Bun.Subprocess[] = [];
let base = "";
let bare = "";
/** Everything the push-enabled process wrote to stdout and stderr. */
let output = "";
/** The executable and the push-enabled process's environment, for the processes a test starts itself. */
let binaryPath = "";
let pushEnv: Record<string, string> = {};

async function collect(readable: ReadableStream<Uint8Array>): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of readable) output += decoder.decode(chunk, { stream: true });
}

async function serve(binary: string, env: Record<string, string>, capture: boolean): Promise<string> {
  const port = await freePort();
  const all = { ...env, HOST: "127.0.0.1", PORT: String(port) };
  const child = Bun.spawn([binary, "serve"], {
    env: all,
    stdout: capture ? "pipe" : "ignore",
    stderr: capture ? "pipe" : "ignore",
  });
  children.push(child);
  if (capture) {
    void collect(child.stdout as ReadableStream<Uint8Array>);
    void collect(child.stderr as ReadableStream<Uint8Array>);
  }
  const url = `http://127.0.0.1:${port}`;
  await waitForOk(`${url}/readyz`, 60_000, () => child.exitCode === null);
  return url;
}

beforeAll(async () => {
  const binary = await builtBinary("notification");
  idp = await startTestIdp();
  web = startWebPushService();
  fcm = await startFcmService();
  folder = mkdtempSync(join(tmpdir(), "push-binary-"));
  const accountFile = join(folder, "service-account.json");
  writeFileSync(accountFile, fcm.serviceAccountJson);
  chmodSync(accountFile, 0o600);
  database = await emptyDatabase("ship_push");
  const url = database.url;
  const common = {
    PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    DATABASE_URL: url,
    NATS_URL: await natsUrl(),
    NOTIFICATION_AUTH_TOKENS: tokenEntryLine("game", GAME, "notify"),
    NOTIFICATION_ENDPOINT_SECRET_KEY: "ab".repeat(32),
    NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
    NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
    NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
    NOTIFICATION_PLAYER_CORS_ORIGINS: LISTED_ORIGIN,
    NOTIFICATION_DELIVERY_POLL_INTERVAL: "200ms",
  };
  const env = {
    ...common,
    ...pipelineNatsNames(stream, `${stream}-durable`),
    NOTIFICATION_PLAYER_NATS_SUBJECT: `${stream}.players`,
    LOG_LEVEL: "debug",
    NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY: vapid.publicKey,
    NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY: vapid.privateKey,
    NOTIFICATION_WEBPUSH_SUBJECT: SUBJECT,
    NOTIFICATION_FCM_SERVICE_ACCOUNT_FILE: accountFile,
    NOTIFICATION_FCM_BASE_URL: fcm.url,
    NOTIFICATION_PUSH_TTL: `${DEFAULT_TTL_S}s`,
    NOTIFICATION_PUSH_TIMEOUT: "3s",
    NOTIFICATION_PUSH_MAX_ATTEMPTS: "6",
    // Fewer slots than one test's hanging pushes, so that only the slots per push service keep the others moving.
    NOTIFICATION_PUSH_MAX_IN_FLIGHT: "20",
    NOTIFICATION_PUSH_CONCURRENCY: "8",
    NOTIFICATION_PUSH_BACKOFF_BASE: "200ms",
    NOTIFICATION_PUSH_BACKOFF_MIN: "100ms",
    NOTIFICATION_PUSH_BACKOFF_MAX: "400ms",
    NOTIFICATION_PUSH_BACKOFF_JITTER_MIN: "1",
    NOTIFICATION_PUSH_BACKOFF_JITTER_MAX: "1",
  };
  binaryPath = binary;
  pushEnv = env;
  const migrate = await runCommand([binary, "migrate"], { env: { ...env, LOG_LEVEL: "warn" } });
  expect(migrate.code, migrate.stderr).toBe(0);
  base = await serve(binary, env, true);
  // No push keys at all: the platforms are off (its own streams, so that it consumes nothing of the other's).
  const bareEnv = {
    ...common,
    ...pipelineNatsNames(bareStream, `${bareStream}-durable`),
    NOTIFICATION_PLAYER_NATS_SUBJECT: `${bareStream}.players`,
    LOG_LEVEL: "warn",
  };
  bare = await serve(binary, bareEnv, false);
  sql = postgres(url, { max: 2, onnotice: () => {}, connection: { search_path: "notification" } });
}, BUILD_TIMEOUT);

afterAll(async () => {
  for (const child of children) child.kill();
  await Promise.all(children.map((c) => c.exited));
  web?.stop();
  fcm?.stop();
  await idp?.close();
  await sql?.end();
  if (folder) rmSync(folder, { recursive: true, force: true });
  await deletePipelineStreams(await natsUrl(), stream);
  await deletePipelineStreams(await natsUrl(), bareStream);
  await database?.drop();
}, 30_000);

const playerToken = (user: string, claims: Record<string, unknown> = {}) => {
  const now = Math.floor(Date.now() / 1000);
  return idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub: user, iat: now, exp: now + 600, ...claims });
};

type Call = { body?: unknown; raw?: string; token?: string; at?: string };

async function me(user: string, method: string, path: string, call: Call = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  const token = call.token ?? (await playerToken(user));
  if (token !== "") headers.authorization = `Bearer ${token}`;
  if (call.body !== undefined || call.raw !== undefined) headers["content-type"] = "application/json";
  return fetch(`${call.at ?? base}/v1/me/${path}`, {
    method,
    headers,
    body: call.raw ?? (call.body === undefined ? undefined : JSON.stringify(call.body)),
  });
}

type Registered = { device_id: string; platform: string; created_at: string };
type Listed = Registered & { last_success_at: string | null };

async function register(user: string, body: unknown, status = 201): Promise<Registered> {
  const response = await me(user, "POST", "devices", { body });
  expect(response.status, await response.clone().text()).toBe(status);
  return (await response.json()) as Registered;
}

async function webDevice(user: string): Promise<{ sub: BrowserSubscription; deviceId: string }> {
  const sub = web.subscribe();
  const { device_id } = await register(user, { platform: "webpush", subscription: sub.json });
  return { sub, deviceId: device_id };
}

async function fcmDevice(user: string): Promise<{ token: string; deviceId: string }> {
  const token = fcm.register();
  const { device_id } = await register(user, { platform: "fcm", token });
  return { token, deviceId: device_id };
}

async function devices(user: string): Promise<{ text: string; list: Listed[] }> {
  const response = await me(user, "GET", "devices");
  expect(response.status).toBe(200);
  const text = await response.text();
  return { text, list: (JSON.parse(text) as { devices: Listed[] }).devices };
}

async function setPreferences(user: string, preferences: unknown): Promise<void> {
  const response = await me(user, "PUT", "preferences", { body: preferences });
  expect(response.status, await response.clone().text()).toBe(200);
}

type SendBody = { type: string; user_ids: string[]; [key: string]: unknown };

async function send(body: SendBody): Promise<void> {
  const response = await fetch(`${base}/v1/notifications`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${GAME}`,
      "content-type": "application/json",
      "idempotency-key": crypto.randomUUID(),
    },
    body: JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBe(202);
}

const webPushes = (sub: BrowserSubscription) => web.received.filter((r) => r.subscriptionId === sub.id);
const fcmPushes = (token: string) => fcm.received.filter((r) => r.message.token === token);

async function notificationOf(user: string, type: string): Promise<{ notification_id: string; seq: number }> {
  return waitUntil(async () => {
    const [row] = await sql<{ notification_id: string; seq: string }[]>`
      select notification_id, seq::text from notifications where user_id = ${user} and type = ${type}`;
    return row && { notification_id: row.notification_id, seq: Number(row.seq) };
  }, `${user}'s ${type} notification to be stored`);
}

/** The push rows of a user's notifications of a type: [status, last_status_code]. */
async function pushRows(user: string, type: string) {
  return sql<{ device_id: string; status: string; last_status_code: number | null; attempt_count: number }[]>`
    select p.device_id, p.status, p.last_status_code, p.attempt_count
    from push_deliveries p join notifications n using (notification_id)
    where n.user_id = ${user} and n.type = ${type}`;
}

/** Waits until every push of the user's notifications of the type ended (or its row is gone). */
async function settled(user: string, type: string): Promise<void> {
  await waitUntil(
    async () => (await pushRows(user, type)).every((r) => !["PENDING", "PROCESSING"].includes(r.status)),
    `${user}'s ${type} pushes to end`,
  );
}

async function pushCount(platform: string, outcome: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text
    .split("\n")
    .find(
      (l) =>
        l.startsWith("notification_pushes_total{") &&
        l.includes(`platform="${platform}"`) &&
        l.includes(`outcome="${outcome}"`),
    );
  return line ? Number(line.split(" ").at(-1)) : 0;
}

describe("devices", () => {
  test("a Web Push subscription registers once: 201, then 200 with the same device; keys are never returned", async () => {
    const user = uniqueName("web");
    const sub = web.subscribe();
    const first = await me(user, "POST", "devices", { body: { platform: "webpush", subscription: sub.json } });
    expect(first.status).toBe(201);
    const created = (await first.json()) as Registered;
    expect(Object.keys(created).sort()).toEqual(["created_at", "device_id", "platform"]);
    expect(created.platform).toBe("webpush");
    expect(Number.isNaN(Date.parse(created.created_at))).toBe(false);
    const again = await register(user, { platform: "webpush", subscription: sub.json }, 200);
    expect(again, "the same subscription again is the same device").toEqual(created);
    const { text, list } = await devices(user);
    expect(list).toEqual([{ ...created, last_success_at: null }]);
    for (const secret of [sub.json.endpoint, sub.json.keys.p256dh, sub.json.keys.auth]) {
      expect(text).not.toContain(secret);
    }
  });

  test("an FCM token registers once; the token is never listed", async () => {
    const user = uniqueName("fcm");
    const token = fcm.register();
    const created = await register(user, { platform: "fcm", token });
    expect(created.platform).toBe("fcm");
    expect(await register(user, { platform: "fcm", token }, 200)).toEqual(created);
    const { text, list } = await devices(user);
    expect(list.map((d) => d.device_id)).toEqual([created.device_id]);
    expect(text).not.toContain(token);
  });

  test("a player keeps at most ten devices: the eleventh replaces the oldest", async () => {
    const user = uniqueName("many");
    const ids: string[] = [];
    for (let i = 0; i < 10; i++)
      ids.push((await register(user, { platform: "fcm", token: `many-${user}-${i}` })).device_id);
    expect((await devices(user)).list).toHaveLength(10);
    const eleventh = await register(user, { platform: "fcm", token: `many-${user}-10` });
    const after = (await devices(user)).list.map((d) => d.device_id);
    expect(after).toHaveLength(10);
    expect(after, "the newest is kept").toContain(eleventh.device_id);
    expect(after, "the oldest is gone").not.toContain(ids[0]);
    expect(after.filter((id) => ids.slice(1).includes(id))).toHaveLength(9);
  });

  test("delete: 204 for mine; another player's or an unknown id is 404 and deletes nothing", async () => {
    const [owner, other] = [uniqueName("owner"), uniqueName("other")];
    const { device_id } = await register(owner, { platform: "fcm", token: fcm.register() });
    const theirs = await me(other, "DELETE", `devices/${device_id}`);
    expect(theirs.status).toBe(404);
    expect(((await theirs.json()) as { code: string }).code).toBe("NOT_FOUND");
    expect((await devices(owner)).list.map((d) => d.device_id)).toEqual([device_id]);
    expect((await me(owner, "DELETE", `devices/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await me(owner, "DELETE", "devices/not-a-uuid")).status).toBe(404);
    const mine = await me(owner, "DELETE", `devices/${device_id}`);
    expect(mine.status).toBe(204);
    expect((await devices(owner)).list).toEqual([]);
  });

  const sub = () => ({ ...(web?.subscribe().json ?? {}) }) as BrowserSubscription["json"];
  const refusals: [string, () => unknown, string, string][] = [
    ["no platform", () => ({ token: "t" }), "BAD_REQUEST", "platform"],
    ["an unknown platform", () => ({ platform: "apns", token: "t" }), "BAD_REQUEST", "platform"],
    ["webpush without a subscription", () => ({ platform: "webpush" }), "BAD_REQUEST", "subscription"],
    [
      "an endpoint that is not a string",
      () => ({ platform: "webpush", subscription: { ...sub(), endpoint: 7 } }),
      "BAD_REQUEST",
      "subscription.endpoint",
    ],
    [
      "an endpoint over 2048 characters",
      () => ({ platform: "webpush", subscription: { ...sub(), endpoint: `https://push.example/${"x".repeat(2048)}` } }),
      "BAD_REQUEST",
      "subscription.endpoint",
    ],
    [
      "an endpoint that is not http(s)",
      () => ({ platform: "webpush", subscription: { ...sub(), endpoint: "ftp://push.example/x" } }),
      "ENDPOINT_URL_NOT_ALLOWED",
      "http",
    ],
    [
      "no keys",
      () => ({ platform: "webpush", subscription: { endpoint: sub().endpoint } }),
      "BAD_REQUEST",
      "subscription.keys",
    ],
    [
      "a p256dh that is not base64url",
      () => ({ platform: "webpush", subscription: { ...sub(), keys: { ...sub().keys, p256dh: "a+b/c" } } }),
      "BAD_REQUEST",
      "subscription.keys.p256dh",
    ],
    [
      "a p256dh of the wrong length",
      () => ({ platform: "webpush", subscription: { ...sub(), keys: { ...sub().keys, p256dh: "AAAA" } } }),
      "BAD_REQUEST",
      "subscription.keys.p256dh",
    ],
    [
      "an auth of the wrong length",
      () => ({ platform: "webpush", subscription: { ...sub(), keys: { ...sub().keys, auth: "AAAA" } } }),
      "BAD_REQUEST",
      "subscription.keys.auth",
    ],
    ["fcm without a token", () => ({ platform: "fcm" }), "BAD_REQUEST", "token"],
    ["a token with a space", () => ({ platform: "fcm", token: "a b" }), "BAD_REQUEST", "token"],
    ["a token over 4096 characters", () => ({ platform: "fcm", token: "t".repeat(4097) }), "BAD_REQUEST", "token"],
    ["a body that is an array", () => [], "BAD_REQUEST", "body"],
  ];
  for (const [what, body, code, field] of refusals) {
    test(`${what}: 400 ${code} naming ${field}`, async () => {
      const user = uniqueName("refused");
      const response = await me(user, "POST", "devices", { body: body() });
      expect(response.status).toBe(400);
      const answer = (await response.json()) as { code: string; message: string };
      expect(answer.code).toBe(code);
      expect(answer.message).toContain(field);
      expect((await devices(user)).list, "nothing registered").toEqual([]);
    });
  }

  test("a platform without keys on this service: 400 PLATFORM_NOT_CONFIGURED, for each platform", async () => {
    const user = uniqueName("bare");
    for (const body of [
      { platform: "fcm", token: "t" },
      { platform: "webpush", subscription: web.subscribe().json },
    ]) {
      const response = await me(user, "POST", "devices", { body, at: bare });
      expect(response.status).toBe(400);
      const answer = (await response.json()) as { code: string; message: string };
      expect(answer.code).toBe("PLATFORM_NOT_CONFIGURED");
      expect(answer.message).toContain(body.platform);
    }
  });

  test("not JSON is refused without registering", async () => {
    const user = uniqueName("raw");
    const response = await me(user, "POST", "devices", { raw: "{not json" });
    expect(response.status).toBe(400);
    expect((await devices(user)).list).toEqual([]);
  });
});

describe("who may call", () => {
  const routes: [string, string, unknown][] = [
    ["POST", "devices", { platform: "fcm", token: "t" }],
    ["GET", "devices", undefined],
    ["DELETE", `devices/${crypto.randomUUID()}`, undefined],
    ["GET", "preferences", undefined],
    ["PUT", "preferences", { push: false, types: {} }],
  ];
  test("no token, a service token, an expired token or another audience's: 401 on every route", async () => {
    const user = uniqueName("anon");
    const now = Math.floor(Date.now() / 1000);
    const tokens = [
      "",
      GAME,
      await playerToken(user, { iat: now - 1200, exp: now - 600 }),
      await playerToken(user, { aud: "https://other.test" }),
    ];
    for (const [method, path, body] of routes) {
      for (const token of tokens) {
        const response = await me(user, method, path, { body, token });
        expect(response.status, `${method} ${path}`).toBe(401);
        expect(((await response.json()) as { code: string }).code).toBe("UNAUTHORIZED");
        expect(response.headers.get("www-authenticate")).toContain("Bearer");
      }
    }
    const [row] = await sql`select count(*)::int as n from player_devices where user_id = ${user}`;
    expect(row?.n).toBe(0);
  });

  test("a browser page of an origin not listed: its preflight is 403 FORBIDDEN; a listed one's is 204", async () => {
    const preflight = (origin: string, method: string) =>
      fetch(`${base}/v1/me/devices`, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": method,
          "access-control-request-headers": "authorization, content-type",
        },
      });
    const refused = await preflight("http://elsewhere.example.test", "POST");
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe("FORBIDDEN");
    const listed = await preflight(LISTED_ORIGIN, "DELETE");
    expect(listed.status).toBe(204);
    expect(listed.headers.get("access-control-allow-methods")).toContain("DELETE");
  });
});

describe("preferences", () => {
  test("everything on until changed; a PUT replaces them and GET reads what is stored", async () => {
    const user = uniqueName("prefs");
    const read = async () => {
      const response = await me(user, "GET", "preferences");
      expect(response.status).toBe(200);
      return response.json();
    };
    expect(await read()).toEqual({ push: true, types: {} });
    const some = { push: true, types: { MatchFound: { push: false }, GiftReceived: { push: true } } };
    const put = await me(user, "PUT", "preferences", { body: some });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual(some);
    expect(await read()).toEqual(some);
    await setPreferences(user, { push: false, types: {} });
    expect(await read(), "a PUT replaces, it does not merge").toEqual({ push: false, types: {} });
  });

  const many = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`T${i}`, { push: true }]));
  const refusals: [string, unknown, string][] = [
    ["push not a boolean", { push: "yes", types: {} }, "push must be true or false"],
    ["types not an object", { push: true, types: [] }, "types must be an object"],
    ["a type that is not a type name", { push: true, types: { "1bad": { push: true } } }, "types' keys"],
    ["a type's push not a boolean", { push: true, types: { Good: { push: 1 } } }, "types.Good.push"],
    ["201 types", { push: true, types: many }, "at most 200"],
  ];
  for (const [what, body, message] of refusals) {
    test(`${what}: 400 BAD_REQUEST naming the field, nothing stored`, async () => {
      const user = uniqueName("prefs-refused");
      const response = await me(user, "PUT", "preferences", { body });
      expect(response.status).toBe(400);
      const answer = (await response.json()) as { code: string; message: string };
      expect(answer.code).toBe("BAD_REQUEST");
      expect(answer.message).toContain(message);
      expect(await (await me(user, "GET", "preferences")).json()).toEqual({ push: true, types: {} });
    });
  }
});

describe("a push", () => {
  test("from the send API reaches a browser: decrypted, VAPID-signed, TTL to expires_at, Topic of collapse_key", async () => {
    const user = uniqueName("browser");
    const { sub, deviceId } = await webDevice(user);
    const expiresAt = new Date(Date.now() + 600_000).toISOString();
    const body = {
      type: "TournamentStarting",
      user_ids: [user],
      title: "Tournament",
      body: "Starts soon",
      data: { tournament_id: "t-7" },
      collapse_key: "tournament-t-7",
      expires_at: expiresAt,
    };
    await send(body);
    const [push] = await waitUntil(() => webPushes(sub).length > 0 && webPushes(sub), "the push to reach the browser");
    const { notification_id, seq } = await notificationOf(user, "TournamentStarting");
    expect(push?.message).toEqual({
      notification_id,
      seq,
      type: "TournamentStarting",
      title: "Tournament",
      body: "Starts soon",
      data: { tournament_id: "t-7" },
    });
    expect(push?.claims.aud).toBe(web.origin);
    expect(push?.claims.sub).toBe(SUBJECT);
    expect(push?.urgency).toBe("normal");
    const ttl = Number(push?.ttl);
    expect(ttl, "TTL counts down to expires_at").toBeGreaterThan(500);
    expect(ttl).toBeLessThanOrEqual(600);
    expect(push?.topic).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
    expect(push?.topic, "the collapse key itself is not sent as the Topic").not.toBe(body.collapse_key);
    await send({ ...body, title: "Tournament (again)" });
    await waitUntil(() => webPushes(sub).length > 1, "the second push");
    expect(webPushes(sub)[1]?.topic, "the same collapse key gives the same Topic").toBe(push?.topic as string);
    const listed = await waitUntil(async () => {
      const [d] = (await devices(user)).list;
      return d?.last_success_at ? d : undefined;
    }, "the device's last success to be recorded");
    expect(listed.device_id).toBe(deviceId);
    expect(web.refused, "the stand-in refused no push").toEqual([]);
  });

  test("without expires_at the TTL is NOTIFICATION_PUSH_TTL, without collapse_key there is no Topic", async () => {
    const user = uniqueName("plain");
    const { sub } = await webDevice(user);
    await send({ type: "EnergyFull", user_ids: [user] });
    const [push] = await waitUntil(() => webPushes(sub).length > 0 && webPushes(sub), "the push");
    expect(Number(push?.ttl)).toBe(DEFAULT_TTL_S);
    expect(push?.topic).toBeNull();
    const other = uniqueName("plain");
    const { sub: otherSub } = await webDevice(other);
    await send({ type: "EnergyFull", user_ids: [other], collapse_key: "energy-b" });
    const [collapsed] = await waitUntil(() => webPushes(otherSub).length > 0 && webPushes(otherSub), "the push");
    const [withA] = await (async () => {
      const third = uniqueName("plain");
      const { sub: s } = await webDevice(third);
      await send({ type: "EnergyFull", user_ids: [third], collapse_key: "energy-a" });
      return waitUntil(() => webPushes(s).length > 0 && webPushes(s), "the push");
    })();
    expect(collapsed?.topic, "another collapse key, another Topic").not.toBe(withA?.topic as string);
  });

  test("from the send API reaches an app through FCM: notification, data strings, collapse keys, ttl", async () => {
    const user = uniqueName("app");
    const { token } = await fcmDevice(user);
    const expiresAt = new Date(Date.now() + 300_000).toISOString();
    await send({
      type: "GiftReceived",
      user_ids: [user],
      title: "A gift",
      body: "From a friend",
      data: { gift: "g-1" },
      collapse_key: "gifts",
      expires_at: expiresAt,
    });
    const [got] = await waitUntil(() => fcmPushes(token).length > 0 && fcmPushes(token), "the FCM message");
    const { notification_id, seq } = await notificationOf(user, "GiftReceived");
    const m = got?.message;
    expect(m?.notification).toEqual({ title: "A gift", body: "From a friend" });
    expect(m?.data).toEqual({
      notification_id,
      seq: String(seq),
      type: "GiftReceived",
      payload: JSON.stringify({ gift: "g-1" }),
    });
    expect(m?.android.collapse_key).toBe("gifts");
    expect(m?.apns.headers["apns-collapse-id"]).toBe("gifts");
    const ttl = Number(/^(\d+)s$/.exec(m?.android.ttl ?? "")?.[1]);
    expect(ttl).toBeGreaterThan(200);
    expect(ttl).toBeLessThanOrEqual(300);
    const expiration = Number(m?.apns.headers["apns-expiration"]);
    expect(Math.abs(expiration - Date.parse(expiresAt) / 1000)).toBeLessThanOrEqual(5);
    expect(fcm.refused, "the stand-in refused no assertion or bearer").toEqual([]);
  });

  test("from an event reaches every device of its player, its payload as the data", async () => {
    const user = uniqueName("evented");
    const { sub } = await webDevice(user);
    const { token } = await fcmDevice(user);
    const nc = await connect({ servers: await natsUrl() });
    try {
      await jetstream(nc).publish(`${stream}.events`, eventBytes({ userId: user, stockKeepingUnit: "sku_gold" }));
    } finally {
      await nc.close();
    }
    const [browser] = await waitUntil(() => webPushes(sub).length > 0 && webPushes(sub), "the browser's push");
    const [app] = await waitUntil(() => fcmPushes(token).length > 0 && fcmPushes(token), "the app's push");
    expect(browser?.message.type).toBe("EntitlementGranted");
    expect(browser?.message.title).toBeNull();
    expect((browser?.message.data as Record<string, unknown> | undefined)?.stock_keeping_unit).toBe("sku_gold");
    expect(app?.message.data.type).toBe("EntitlementGranted");
    expect(app?.message.notification, "an event gives no title or body").toBeUndefined();
    expect(JSON.parse(app?.message.data.payload ?? "{}").stock_keeping_unit).toBe("sku_gold");
  });
});

describe("a push's size and isolation", () => {
  test("a payload too large for 4,096 bytes encrypted goes without its data", async () => {
    const user = uniqueName("big");
    const { sub } = await webDevice(user);
    await send({ type: "BigNews", user_ids: [user], title: "Big", data: { blob: "x".repeat(6_000) } });
    const [push] = await waitUntil(() => webPushes(sub).length > 0 && webPushes(sub), "the push");
    expect(push?.bodyBytes).toBeLessThanOrEqual(4096);
    expect(push?.message.title).toBe("Big");
    expect(push?.message.data).toBeNull();
  });

  test("a push service that hangs holds only its own pushes: another's arrive while they hang", async () => {
    const hanging = startWebPushService();
    try {
      const stuck = [uniqueName("stuck"), uniqueName("stuck")];
      const subs: BrowserSubscription[] = [];
      for (const user of stuck) {
        for (let i = 0; i < 10; i++) {
          const sub = hanging.subscribe();
          hanging.answer(sub.id, "hang");
          await register(user, { platform: "webpush", subscription: sub.json });
          subs.push(sub);
        }
      }
      const fine = uniqueName("fine");
      const { sub } = await webDevice(fine);
      await send({ type: "Tick", user_ids: stuck });
      const inFlight = () => [...hanging.requests.values()].reduce((a, b) => a + b, 0);
      await waitUntil(() => inFlight() >= 8, "the hanging service to hold its slots");
      await send({ type: "Tick", user_ids: [fine] });
      await waitUntil(() => webPushes(sub).length > 0, "the healthy service's push");
      const hung = await sql<{ status: string; last_error: string | null }[]>`
        select p.status, p.last_error from push_deliveries p join notifications n using (notification_id)
        where n.user_id = any(${stuck}::text[]) and n.type = 'Tick'`;
      expect(hung).toHaveLength(20);
      expect(
        hung.filter((r) => r.last_error !== null),
        "no hanging push had timed out yet when the other service's push arrived",
      ).toEqual([]);
      for (const s of subs) hanging.answer(s.id, { status: 201 });
      await settled(stuck[0] as string, "Tick");
      await settled(stuck[1] as string, "Tick");
    } finally {
      hanging.stop();
    }
  });
});

describe("preferences at push time", () => {
  test("push off for everything: nothing pushed, to any device; the inbox keeps it", async () => {
    const user = uniqueName("quiet");
    const { sub } = await webDevice(user);
    const { token } = await fcmDevice(user);
    await setPreferences(user, { push: false, types: { EnergyFull: { push: true } } });
    await send({ type: "EnergyFull", user_ids: [user] });
    await notificationOf(user, "EnergyFull");
    await settled(user, "EnergyFull");
    // A push to a player who did not turn it off, sent after, arrives: had the first been pushed, it came before.
    const control = uniqueName("control");
    const { sub: controlSub } = await webDevice(control);
    await send({ type: "EnergyFull", user_ids: [control] });
    await waitUntil(() => webPushes(controlSub).length > 0, "the control push");
    expect(webPushes(sub)).toEqual([]);
    expect(fcmPushes(token)).toEqual([]);
    const inbox = await me(user, "GET", "notifications");
    expect(((await inbox.json()) as { items: unknown[] }).items, "the inbox is not filtered").toHaveLength(1);
  });

  test("push off for one type: that type is not pushed, another is", async () => {
    const user = uniqueName("picky");
    const { sub } = await webDevice(user);
    await setPreferences(user, { push: true, types: { MatchFound: { push: false } } });
    await send({ type: "MatchReady", user_ids: [user], title: "first" });
    await waitUntil(() => webPushes(sub).length > 0, "the MatchReady push");
    const [row] = await sql`select count(*)::int as n from notifications where user_id = ${user}`;
    expect(row?.n).toBe(1);
    await send({ type: "ClanInvite", user_ids: [user], title: "third" });
    await waitUntil(() => webPushes(sub).length > 1, "the ClanInvite push");
    expect(webPushes(sub).map((p) => p.message.type)).toEqual(["MatchReady", "ClanInvite"]);
  });

  test("push turned off after a notification was stored but before its push went out: it is not pushed", async () => {
    const user = uniqueName("changed-mind");
    const { sub } = await webDevice(user);
    const { token } = await fcmDevice(user);
    web.answer(sub.id, { status: 503, retryAfter: "2" });
    fcm.answer(token, { status: 503, retryAfter: "2" });
    await send({ type: "GuildWar", user_ids: [user], title: "War" });
    await waitUntil(
      async () => (await pushRows(user, "GuildWar")).every((r) => r.last_status_code === 503),
      "both to fail once",
    );
    await setPreferences(user, { push: true, types: { GuildWar: { push: false } } });
    web.answer(sub.id, { status: 201 });
    fcm.answer(token, { status: 200 });
    await settled(user, "GuildWar");
    expect(webPushes(sub), "only the refused first attempt reached the browser").toHaveLength(1);
    expect(fcmPushes(token)).toEqual([]);
    expect(await pushCount("webpush", "skipped")).toBeGreaterThan(0);
  });

  test("a device that moved to another player before a push went out does not get the first player's push", async () => {
    const [first, second] = [uniqueName("seller"), uniqueName("buyer")];
    const { sub } = await webDevice(first);
    web.answer(sub.id, { status: 503, retryAfter: "2" });
    await send({ type: "PrivateNote", user_ids: [first], body: "for the first player only" });
    await waitUntil(async () => (await pushRows(first, "PrivateNote"))[0]?.last_status_code === 503, "a failed try");
    await register(second, { platform: "webpush", subscription: sub.json });
    web.answer(sub.id, { status: 201 });
    await settled(first, "PrivateNote");
    expect(webPushes(sub), "only the refused first attempt").toHaveLength(1);
  });
});

describe("the push service's answer", () => {
  test("Web Push 404 and 410, FCM UNREGISTERED: the device is deleted", async () => {
    const user = uniqueName("gone");
    const a = await webDevice(user);
    const b = await webDevice(user);
    const kept = await webDevice(user);
    web.answer(a.sub.id, { status: 404 });
    web.answer(b.sub.id, { status: 410 });
    const unregistered = await register(user, { platform: "fcm", token: `unknown-${user}` });
    const goneBefore = await pushCount("webpush", "gone");
    await send({ type: "Farewell", user_ids: [user] });
    await waitUntil(async () => {
      const ids = (await devices(user)).list.map((d) => d.device_id);
      return ids.length === 1 && ids;
    }, "the gone devices to be deleted");
    expect((await devices(user)).list.map((d) => d.device_id)).toEqual([kept.deviceId]);
    expect(await pushCount("webpush", "gone")).toBeGreaterThanOrEqual(goneBefore + 2);
    expect(await pushCount("fcm", "gone")).toBeGreaterThan(0);
    expect(unregistered.device_id).not.toBe(kept.deviceId);
  });

  test("another 4xx fails that push only: the device stays and gets the next one", async () => {
    const user = uniqueName("too-big");
    const { sub, deviceId } = await webDevice(user);
    web.answer(sub.id, { status: 413 });
    await send({ type: "Oversized", user_ids: [user] });
    await waitUntil(async () => (await pushRows(user, "Oversized"))[0]?.status === "FAILED", "the push to fail");
    expect((await pushRows(user, "Oversized"))[0]?.attempt_count, "not retried").toBe(1);
    web.answer(sub.id, { status: 201 });
    await send({ type: "Smaller", user_ids: [user] });
    await waitUntil(async () => (await pushRows(user, "Smaller"))[0]?.status === "SENT", "the next push");
    expect((await devices(user)).list.map((d) => d.device_id)).toEqual([deviceId]);
  });

  test("Web Push 429 retries no sooner than its Retry-After, then delivers", async () => {
    const user = uniqueName("busy");
    const { sub } = await webDevice(user);
    web.answer(sub.id, { status: 429, retryAfter: "2" });
    await send({ type: "RaidStart", user_ids: [user] });
    await waitUntil(() => webPushes(sub).length > 0, "the first try");
    web.answer(sub.id, { status: 201 });
    await waitUntil(async () => (await pushRows(user, "RaidStart"))[0]?.status === "SENT", "the retry to deliver");
    const [first, second] = webPushes(sub);
    expect((second?.at ?? 0) - (first?.at ?? 0), "the backoff alone is at most 400 ms").toBeGreaterThanOrEqual(1_900);
    expect((await pushRows(user, "RaidStart"))[0]?.attempt_count).toBe(2);
  });

  test("FCM 503 retries no sooner than its Retry-After, then delivers", async () => {
    const user = uniqueName("fcm-busy");
    const { token } = await fcmDevice(user);
    fcm.answer(token, { status: 503, retryAfter: "2" });
    await send({ type: "RaidEnd", user_ids: [user] });
    await waitUntil(async () => (await pushRows(user, "RaidEnd"))[0]?.last_status_code === 503, "the first try");
    const seen = performance.now();
    fcm.answer(token, { status: 200 });
    const [got] = await waitUntil(() => fcmPushes(token).length > 0 && fcmPushes(token), "the retry");
    expect((got?.at ?? 0) - seen).toBeGreaterThanOrEqual(1_000);
    expect(await pushCount("fcm", "retry")).toBeGreaterThan(0);
  });

  test("a notification that expired before its retry is not pushed again: EXPIRED, not FAILED", async () => {
    const user = uniqueName("late");
    const { sub } = await webDevice(user);
    web.answer(sub.id, { status: 503, retryAfter: "4" });
    const expiresAt = Date.now() + 2_000;
    await send({ type: "FlashSale", user_ids: [user], expires_at: new Date(expiresAt).toISOString() });
    await waitUntil(
      async () => (await pushRows(user, "FlashSale"))[0]?.status === "EXPIRED",
      "the push to expire",
      30_000,
    );
    expect(web.requests.get(sub.id), "tried once, before the expiry").toBe(1);
    expect(await pushCount("webpush", "expired")).toBeGreaterThan(0);
  });
});

describe("the logs", () => {
  test("never hold the VAPID private key, the service account's key, access tokens, subscription keys or tokens", async () => {
    const user = uniqueName("logged");
    const { sub } = await webDevice(user);
    const { token } = await fcmDevice(user);
    await send({ type: "LogCheck", user_ids: [user] });
    await waitUntil(() => webPushes(sub).length > 0 && fcmPushes(token).length > 0, "both pushes");
    expect(output.length, "the process logged at debug").toBeGreaterThan(0);
    const account = JSON.parse(fcm.serviceAccountJson) as { private_key: string; private_key_id: string };
    const keyBody = account.private_key.split("\n").filter((l) => l && !l.startsWith("-----"));
    const secrets = [
      vapid.privateKey,
      createHash("sha256").update(vapid.privateKey).digest("hex"),
      account.private_key_id,
      ...keyBody.slice(0, 3),
      sub.json.keys.auth,
      sub.json.keys.p256dh,
      token,
    ];
    for (const secret of secrets) expect(output).not.toContain(secret);
    expect(output, "no FCM access token").not.toMatch(/ya29\./);
  });
});

describe("docs/api.md", () => {
  test("the devices and preferences example runs as it is, each call answered below 400", async () => {
    const guide = readFileSync(join(repoRoot, "docs/api.md"), "utf8");
    const block = [...guide.matchAll(/```sh\n([\s\S]*?)```/g)]
      .map((m) => m[1] as string)
      .find((text) => text.includes("/v1/me/devices"));
    expect(block, "docs/api.md has a shell example of the devices").toBeDefined();
    const user = uniqueName("documented");
    const report = "curl() { command curl --write-out '%{stderr}CALL %{http_code}\\n' \"$@\"; }";
    const { code, stdout, stderr } = await runCommand(["bash", "-c", ["set -euo pipefail", report, block].join("\n")], {
      env: { ...process.env, NOTIFICATION: base, PLAYER_TOKEN: await playerToken(user), USER_ID: user },
    });
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    const statuses = [...stderr.matchAll(/^CALL (\d{3})$/gm)].map((m) => Number(m[1]));
    expect(statuses).toEqual([201, 200, 200, 200, 204, 200]);
    expect((await devices(user)).list, "the example deletes the device it registered").toEqual([]);
    expect(await (await me(user, "GET", "preferences")).json()).toEqual({ push: true, types: {} });
  });
});

describe("a bad push configuration", () => {
  test("stops the process with a line naming the variable, never the key's value", async () => {
    const wrongLength = Buffer.alloc(31, 7).toString("base64url");
    const vapidRun = await runCommand([binaryPath, "serve"], {
      env: { ...pushEnv, PORT: String(await freePort()), NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY: wrongLength },
    });
    expect(vapidRun.code).not.toBe(0);
    const vapidText = vapidRun.stdout + vapidRun.stderr;
    expect(vapidText).toContain("NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY must be 32 bytes");
    expect(vapidText).not.toContain(wrongLength);
    const account = JSON.parse(fcm.serviceAccountJson) as Record<string, string>;
    const broken = join(folder, "no-client-email.json");
    writeFileSync(broken, JSON.stringify({ ...account, client_email: "" }));
    const fcmRun = await runCommand([binaryPath, "serve"], {
      env: { ...pushEnv, PORT: String(await freePort()), NOTIFICATION_FCM_SERVICE_ACCOUNT_FILE: broken },
    });
    expect(fcmRun.code).not.toBe(0);
    const fcmText = fcmRun.stdout + fcmRun.stderr;
    expect(fcmText).toContain("client_email");
    const keyLines = (account.private_key ?? "").split("\n").filter((l) => l && !l.startsWith("-----"));
    for (const line of keyLines.slice(0, 3)) expect(fcmText).not.toContain(line);
  });
});
