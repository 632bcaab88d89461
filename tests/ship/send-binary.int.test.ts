// The send API (POST /v1/notifications) against the compiled Notification executable, started once: a game server's
// token with the notify scope sends to players; each recipient's notification is in their inbox and live stream, goes
// to the endpoints subscribed to its type, collapses and expires; the same key replays, another body under it is 409,
// every refusal names its field; and the players' routes answer a browser on a listed origin.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { startTestIdp, type TestIdp } from "../support/idp.ts";
import { natsUrl, uniqueName } from "../support/infra.ts";
import { deletePipelineStreams, pipelineNatsNames } from "../support/nats-names.ts";
import { runCommand } from "../support/process.ts";
import { waitUntil } from "../support/wait.ts";
import { builtBinary, emptyDatabase, freePort, waitForOk } from "./support.ts";

const BUILD_TIMEOUT = 240_000;
setDefaultTimeout(60_000);
const AUDIENCE = "https://game.test";
const GAME = "game-token-0123456789abcdef";
const ADMIN = "admin-token-0123456789abcdef";
const LISTED_ORIGIN = "http://play.example.test";
const stream = uniqueName("send").replaceAll("_", "-");
/** Deliveries to players whose id starts with this fail, so that they are retried past their expiry. */
const FAILING = "failing-";

let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;
let sql: postgres.Sql;
let idp: TestIdp;
let child: Bun.Subprocess | undefined;
let base = "";
let receiver: ReturnType<typeof Bun.serve> | undefined;
/** What each receiver path got: the body and the traceparent header. */
const received = new Map<string, { body: Record<string, unknown>; traceparent: string | null }[]>();

beforeAll(async () => {
  const binary = await builtBinary("notification");
  idp = await startTestIdp();
  database = await emptyDatabase("ship_send");
  const url = database.url;
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      const list = received.get(path) ?? [];
      list.push({
        body: (await request.json()) as Record<string, unknown>,
        traceparent: request.headers.get("traceparent"),
      });
      received.set(path, list);
      return new Response(null, { status: path === "/flaky" ? 500 : 204 });
    },
  });
  const port = await freePort();
  const env = {
    PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    LOG_LEVEL: "warn",
    DATABASE_URL: url,
    NATS_URL: await natsUrl(),
    ...pipelineNatsNames(stream, `${stream}-durable`),
    HOST: "127.0.0.1",
    PORT: String(port),
    NOTIFICATION_AUTH_TOKENS: `${tokenEntryLine("game", GAME, "notify")},${tokenEntryLine("admin", ADMIN, "read+write")}`,
    NOTIFICATION_ENDPOINT_SECRET_KEY: "ab".repeat(32),
    NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
    NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
    NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
    NOTIFICATION_PLAYER_NATS_SUBJECT: `${stream}.players`,
    NOTIFICATION_PLAYER_CORS_ORIGINS: LISTED_ORIGIN,
    NOTIFICATION_DELIVERY_FAILURE_INJECTION_ENABLED: "true",
    NOTIFICATION_DELIVERY_FAILURE_INJECTION_USER_ID_PREFIX: FAILING,
    NOTIFICATION_DELIVERY_BACKOFF_BASE: "500ms",
    NOTIFICATION_DELIVERY_BACKOFF_MIN: "500ms",
    NOTIFICATION_DELIVERY_BACKOFF_MAX: "1s",
    NOTIFICATION_DELIVERY_POLL_INTERVAL: "200ms",
    NOTIFICATION_ENDPOINT_BACKOFF_BASE: "500ms",
    NOTIFICATION_ENDPOINT_BACKOFF_MIN: "500ms",
    NOTIFICATION_ENDPOINT_BACKOFF_MAX: "1s",
  };
  const migrate = await runCommand([binary, "migrate"], { env });
  expect(migrate.code, migrate.stderr).toBe(0);
  const started = Bun.spawn([binary, "serve"], { env, stdout: "ignore", stderr: "ignore" });
  child = started;
  base = `http://127.0.0.1:${port}`;
  await waitForOk(`${base}/readyz`, 60_000, () => started.exitCode === null);
  sql = postgres(url, { max: 2, onnotice: () => {}, connection: { search_path: "notification" } });
}, BUILD_TIMEOUT);

afterAll(async () => {
  child?.kill();
  await child?.exited;
  receiver?.stop(true);
  await idp?.close();
  await sql?.end();
  await deletePipelineStreams(await natsUrl(), stream);
  await database?.drop();
}, 30_000);

type Send = { body?: unknown; key?: string; token?: string; headers?: Record<string, string>; raw?: string };

function send(options: Send): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json", ...options.headers };
  if (options.token !== "") headers.authorization = `Bearer ${options.token ?? GAME}`;
  if (options.key !== "") headers["idempotency-key"] = options.key ?? crypto.randomUUID();
  return fetch(`${base}/v1/notifications`, {
    method: "POST",
    headers,
    body: options.raw ?? JSON.stringify(options.body),
  });
}

const playerToken = (user: string) => {
  const now = Math.floor(Date.now() / 1000);
  return idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub: user, iat: now, exp: now + 600 });
};

async function inbox(user: string) {
  const response = await fetch(`${base}/v1/me/notifications`, {
    headers: { authorization: `Bearer ${await playerToken(user)}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { items: Record<string, unknown>[]; unread_count: number };
}

async function registerEndpoint(path: string, types: string[]): Promise<void> {
  const response = await fetch(`${base}/v1/webhook-endpoints`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ url: `http://127.0.0.1:${receiver?.port}${path}`, event_types: types }),
  });
  expect(response.status, await response.clone().text()).toBe(201);
}

describe("a send", () => {
  test("is 202 once each distinct recipient's notification is in their inbox, numbered as their next seq", async () => {
    const [a, b] = [uniqueName("p"), uniqueName("p")];
    const body = {
      type: "TournamentStarting",
      user_ids: [a, b, a],
      data: { tournament_id: "t-42", starts_in_s: 300 },
      title: "Tournament",
      body: "Starts in five minutes",
    };
    const response = await send({ body });
    expect(response.status).toBe(202);
    const reply = (await response.json()) as { request_id: string; recipients: number };
    expect(reply.recipients, "a repeated id counts once").toBe(2);
    for (const user of [a, b]) {
      const { items, unread_count } = await inbox(user);
      expect(unread_count).toBe(1);
      expect(items).toHaveLength(1);
      expect(items[0]?.type).toBe("TournamentStarting");
      expect(items[0]?.seq).toBe(1);
      expect(items[0]?.payload).toEqual({
        type: "TournamentStarting",
        user_id: user,
        data: body.data,
        title: "Tournament",
        body: "Starts in five minutes",
        collapse_key: null,
        expires_at: null,
        request_id: reply.request_id,
      });
    }
  });

  test("retried with its key gives the same answer and stores nothing more; another body under it is 409", async () => {
    const user = uniqueName("retry");
    const key = uniqueName("key");
    const body = { type: "GuildInvite", user_ids: [user], data: { guild: "g1" } };
    const first = await send({ body, key });
    const again = await send({ body, key });
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(await again.json(), "the retry's answer is the first's").toEqual(await first.json());
    const conflict = await send({ body: { ...body, data: { guild: "g2" } }, key });
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as { code: string }).code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    const rows = await sql`select seq from notifications where user_id = ${user}`;
    expect(
      rows.map((r) => Number(r.seq)),
      "one notification for one request and recipient",
    ).toEqual([1]);
  });

  test("the same key sent at once from two callers' retries stores one notification per recipient", async () => {
    const users = Array.from({ length: 50 }, () => uniqueName("race"));
    const key = uniqueName("race-key");
    const body = { type: "GiftReceived", user_ids: users };
    const answers = await Promise.all(Array.from({ length: 6 }, () => send({ body, key })));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(202));
    const ids = new Set(
      await Promise.all(answers.map(async (a) => ((await a.json()) as { request_id: string }).request_id)),
    );
    expect(ids.size, "every concurrent retry gets the same request").toBe(1);
    const [row] = await sql`select count(*)::int as n from notifications where user_id = any(${users}::text[])`;
    expect(row?.n).toBe(users.length);
  });

  test("reaches the player's live stream, carrying the request's trace", async () => {
    const user = uniqueName("live");
    const controller = new AbortController();
    const response = await fetch(`${base}/v1/me/notifications/stream`, {
      headers: { authorization: `Bearer ${await playerToken(user)}` },
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const sent = await send({
      body: { type: "EnergyFull", user_ids: [user] },
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(sent.status).toBe(202);
    let text = "";
    const deadline = Date.now() + 30_000;
    while (!text.includes("event: notification") && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    expect(text).toContain("event: notification");
    expect(text).toContain('"type":"EnergyFull"');
    const [row] = await sql`select traceparent from notifications where user_id = ${user}`;
    expect(row?.traceparent, "the notification continues the request's trace").toContain(traceId);
  });

  test("goes to the endpoints whose event_types name its type, with the request's trace", async () => {
    await registerEndpoint("/tournaments", ["TournamentReminder"]);
    await registerEndpoint("/energy", ["EnergyNotice", "EntitlementGranted"]);
    const user = uniqueName("hooked");
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const sent = await send({
      body: { type: "TournamentReminder", user_ids: [user] },
      headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
    });
    expect(sent.status).toBe(202);
    const got = await waitUntil(
      () => received.get("/tournaments")?.find((r) => r.body.user_id === user),
      "the tournaments endpoint to receive the reminder",
    );
    expect(got.traceparent).toContain(traceId);
    expect(received.get("/energy") ?? [], "an endpoint of other types gets nothing").toHaveLength(0);
  });

  test("an endpoint's event_types refuse a built-in type spelled in another case, naming the one meant", async () => {
    const response = await fetch(`${base}/v1/webhook-endpoints`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "http://127.0.0.1:9/x", event_types: ["entitlementGranted"] }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain(
      'event_types[0] "entitlementGranted" is not a notification type; did you mean EntitlementGranted?',
    );
  });

  test("with a collapse_key supersedes the player's older one: marked read, one unread left", async () => {
    const user = uniqueName("energy");
    const body = { type: "EnergyRefill", user_ids: [user], collapse_key: "energy", data: { energy: 50 } };
    expect((await send({ body })).status).toBe(202);
    expect((await send({ body: { ...body, data: { energy: 100 } } })).status).toBe(202);
    const { items, unread_count } = await inbox(user);
    expect(unread_count, "the newer notice supersedes the older").toBe(1);
    expect(items.map((i) => [i.seq, i.read_at === null])).toEqual([
      [2, true],
      [1, false],
    ]);
  });

  test("past its expires_at is no longer delivered, to the channel or an endpoint: it ends expired, not failed", async () => {
    await registerEndpoint("/flaky", ["FlashSale"]);
    const user = uniqueName(FAILING);
    const expiresAt = new Date(Date.now() + 2_000).toISOString();
    expect((await send({ body: { type: "FlashSale", user_ids: [user], expires_at: expiresAt } })).status).toBe(202);
    const row = await waitUntil(async () => {
      const [stored] = await sql`
        select n.status, n.expired_at, n.sent_at, d.status as endpoint_status, d.expired_at as endpoint_expired_at,
               d.sent_at as endpoint_sent_at
        from notifications n join webhook_deliveries d using (notification_id) where n.user_id = ${user}`;
      return stored?.expired_at && stored.endpoint_expired_at ? stored : undefined;
    }, "the notification and its endpoint delivery to end expired");
    expect([row.status, row.sent_at, row.endpoint_status, row.endpoint_sent_at]).toEqual(["SENT", null, "SENT", null]);
    const attempts = received.get("/flaky")?.filter((r) => r.body.user_id === user);
    const [last] = await sql`
      select max(a.at) as at from webhook_attempts a join notifications n using (notification_id) where n.user_id = ${user}`;
    expect(attempts?.length, "the endpoint was tried before the expiry").toBeGreaterThan(0);
    expect(new Date(last?.at).getTime(), "and never after it").toBeLessThanOrEqual(new Date(expiresAt).getTime());
    const [dlq] = await sql`
      select count(*)::int as n from notification_dlq d join notifications n using (notification_id)
      where n.user_id = ${user}`;
    expect(dlq?.n, "an expired notification is not a failure").toBe(0);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/notification_delivery_total\{result="expired"[^}]*\} [1-9]/);
    expect(metrics).toMatch(/notification_webhook_endpoint_deliveries_total\{result="expired"[^}]*\} [1-9]/);
  });
});

describe("a refused send", () => {
  const ok = { type: "Custom", user_ids: ["u1"] };
  const refusals: [string, Send, string][] = [
    ["no Idempotency-Key", { body: ok, key: "" }, "Idempotency-Key"],
    ["no type", { body: { user_ids: ["u1"] } }, "type is required"],
    ["a type breaking the rule", { body: { ...ok, type: "9lives" } }, "type must be"],
    ["a built-in type", { body: { ...ok, type: "EntitlementGranted" } }, "type must not be EntitlementGranted"],
    ["a built-in type in another case", { body: { ...ok, type: "matchfound" } }, "type must not be MatchFound"],
    ["no user_ids", { body: { type: "Custom" } }, "user_ids is required"],
    ["no recipient", { body: { ...ok, user_ids: [] } }, "user_ids must hold 1 to 1000"],
    [
      "1,001 recipients",
      { body: { ...ok, user_ids: Array.from({ length: 1001 }, (_, i) => `u${i}`) } },
      "user_ids must hold 1 to 1000",
    ],
    ["a blank user id", { body: { ...ok, user_ids: ["u1", " "] } }, "user_ids[1]"],
    ["data not an object", { body: { ...ok, data: [1] } }, "data must be a JSON object"],
    ["data over 8 KiB", { body: { ...ok, data: { s: "x".repeat(8200) } } }, "data must be at most 8192 bytes"],
    ["data with U+0000", { body: { ...ok, data: { s: "a\u0000b" } } }, "data must be well-formed Unicode"],
    ["a title over 200 characters", { body: { ...ok, title: "t".repeat(201) } }, "title must be at most 200"],
    ["a body over 2,000 characters", { body: { ...ok, body: "b".repeat(2001) } }, "body must be at most 2000"],
    ["a collapse_key over 64 characters", { body: { ...ok, collapse_key: "k".repeat(65) } }, "collapse_key must be"],
    [
      "expires_at without an offset",
      { body: { ...ok, expires_at: "2030-01-01T00:00:00" } },
      "expires_at must be an ISO-8601",
    ],
    [
      "expires_at in the past",
      { body: { ...ok, expires_at: "2020-01-01T00:00:00Z" } },
      "expires_at must be in the future",
    ],
    [
      "expires_at 31 days ahead",
      { body: { ...ok, expires_at: new Date(Date.now() + 31 * 86_400_000).toISOString() } },
      "expires_at must be at most 30 days ahead",
    ],
  ];
  for (const [what, request, message] of refusals) {
    test(`${what}: 400 BAD_REQUEST naming the field`, async () => {
      const response = await send(request);
      expect(response.status).toBe(400);
      const body = (await response.json()) as { code: string; message: string };
      expect(body.code).toBe("BAD_REQUEST");
      expect(body.message).toContain(message);
    });
  }

  test("a body over 256 KiB is 413; not JSON is 415", async () => {
    const big = await send({ body: { ...ok, data: { s: "x".repeat(270_000) } } });
    expect(big.status).toBe(413);
    const text = await send({ raw: "hello", headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(415);
  });

  test("no token or an unknown one is 401; a token without notify is 403", async () => {
    expect((await send({ body: ok, token: "" })).status).toBe(401);
    expect((await send({ body: ok, token: "not-a-known-token-0123456789" })).status).toBe(401);
    const forbidden = await send({ body: ok, token: ADMIN });
    expect(forbidden.status).toBe(403);
    expect(((await forbidden.json()) as { code: string }).code).toBe("FORBIDDEN");
  });
});

describe("a browser on another origin", () => {
  const preflight = (origin: string) =>
    fetch(`${base}/v1/me/notifications`, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });

  test("listed: its preflight is 204 with the methods, headers and max age; the answers carry its origin", async () => {
    const response = await preflight(LISTED_ORIGIN);
    expect(response.status).toBe(204);
    const h = response.headers;
    expect(h.get("access-control-allow-origin")).toBe(LISTED_ORIGIN);
    expect(h.get("vary")).toContain("Origin");
    expect(h.get("access-control-allow-methods")).toBe("GET, POST, PUT, DELETE");
    expect(h.get("access-control-allow-headers")).toBe("Authorization, Content-Type, Last-Event-ID");
    expect(Number(h.get("access-control-max-age"))).toBeGreaterThan(0);
    const user = uniqueName("cors");
    const read = await fetch(`${base}/v1/me/notifications`, {
      headers: { origin: LISTED_ORIGIN, authorization: `Bearer ${await playerToken(user)}` },
    });
    expect(read.status).toBe(200);
    expect(read.headers.get("access-control-allow-origin")).toBe(LISTED_ORIGIN);
    const refused = await fetch(`${base}/v1/me/notifications`, { headers: { origin: LISTED_ORIGIN } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin"), "a refusal is readable by the page too").toBe(
      LISTED_ORIGIN,
    );
  });

  test("not listed: no CORS header at all, on the preflight or the answer", async () => {
    const other = "http://elsewhere.example.test";
    const response = await preflight(other);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    expect(response.headers.get("access-control-allow-methods")).toBeNull();
    const read = await fetch(`${base}/v1/me/notifications`, {
      headers: { origin: other, authorization: `Bearer ${await playerToken(uniqueName("cors"))}` },
    });
    expect(read.status).toBe(200);
    expect(read.headers.get("access-control-allow-origin")).toBeNull();
  });
});
