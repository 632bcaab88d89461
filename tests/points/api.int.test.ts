// The points API through createApp(...).handle against a real PostgreSQL: reserve (201, replay, key conflict),
// read, cancel (and too late to cancel), the balance with its paged ledger, the error envelope for bad input, and
// the scopes of each route.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { createApp } from "../../src/entitlement/app.ts";
import { type Scope, sha256 } from "../../src/shared/auth/tokens.ts";
import { encodeCursor } from "../../src/shared/http/paging.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { send, useApi } from "../entitlement/api.helpers.ts";
import { createReplica } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useApi("ptsapi", { resetEach: true });

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

/** `key` null: no Idempotency-Key header. */
function post(path: string, body: unknown, key: string | null = crypto.randomUUID()) {
  return new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}

const get = (path: string) => new Request(`http://localhost${path}`);
const reserve = (body: unknown, key?: string | null) => send(f.app, post("/v1/points/reservations", body, key));
const valid = (over: Record<string, unknown> = {}) => ({
  user_id: "u1",
  point_amount: 100,
  execute_at: inMs(60_000),
  reason: "campaign",
  ...over,
});

describe("reserve", () => {
  test("201 with the reservation, PENDING; GET returns the same", async () => {
    const body = valid();
    const r = await reserve(body);
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({
      user_id: "u1",
      point_amount: 100,
      execute_at: body.execute_at,
      reason: "campaign",
      status: "PENDING",
    });
    expect(Object.keys(r.json)).toEqual([
      "reservation_id",
      "user_id",
      "point_amount",
      "execute_at",
      "reason",
      "status",
      "created_at",
      "updated_at",
    ]);
    const read = await send(f.app, get(`/v1/points/reservations/${r.json.reservation_id}`));
    expect(read.status).toBe(200);
    expect(read.json).toEqual(r.json);
  });

  test("the same key and body replays the stored reply byte for byte; another body is 409", async () => {
    const body = valid();
    const first = await reserve(body, "k1");
    const again = await reserve(body, "k1");
    expect(again.status).toBe(201);
    expect(again.text, "a replay is the stored reply").toBe(first.text);
    const [n] = await f.sql`select count(*)::int as n from point_reservations`;
    expect(n?.n, "a replay reserves nothing").toBe(1);
    const other = await reserve({ ...body, point_amount: 5 }, "k1");
    expect(other.status).toBe(409);
    expect(other.json).toEqual({ code: "IDEMPOTENCY_KEY_CONFLICT", message: "Idempotency-Key conflict" });
  });

  test("a past execute_at means now; reason is optional", async () => {
    const before = Date.now();
    const r = await reserve({ user_id: "u1", point_amount: 1, execute_at: "2001-01-01T00:00:00Z" });
    expect(r.status).toBe(201);
    expect(new Date(String(r.json.execute_at)).getTime()).toBeGreaterThanOrEqual(before);
    expect(r.json.reason).toBeNull();
  });

  test.each([
    [{ point_amount: 0 }, "point_amount must be between 1 and 1000000000"],
    [{ point_amount: 1_000_000_001 }, "point_amount must be between 1 and 1000000000"],
    [{ point_amount: 1.5 }, "point_amount must be an integer"],
    [{ point_amount: "100" }, "point_amount must be an integer"],
    [{ point_amount: undefined }, "point_amount is required"],
    [{ execute_at: "2026-01-15T10:00:00" }, "execute_at must be an ISO-8601 date-time with an offset"],
    [{ execute_at: "tomorrow" }, "execute_at must be an ISO-8601 date-time with an offset"],
    [{ execute_at: inMs(367 * 24 * 3_600_000) }, "execute_at must be at most 366 days ahead"],
    [{ execute_at: "2027-02-30T00:00:00+01:00" }, "execute_at must be an ISO-8601 date-time with an offset"],
    [{ execute_at: "0000-01-01T00:00:00Z" }, "execute_at must be an ISO-8601 date-time with an offset"],
    [{ execute_at: "2026-06-31T10:00:00Z" }, "execute_at must be an ISO-8601 date-time with an offset"],
    [{ user_id: "" }, "user_id is required"],
    [{ user_id: "a\nb" }, "user_id must not contain control characters"],
    [{ user_id: "a\u0085b" }, "user_id must not contain control characters"],
    [{ reason: "x".repeat(65) }, "reason must be at most 64 characters"],
  ])("bad input %p → 400 %s", async (over, message) => {
    const r = await reserve(valid(over));
    expect(r.status).toBe(400);
    expect(r.json.code).toBe("BAD_REQUEST");
    expect(String(r.json.message)).toStartWith(message);
  });

  test("a missing Idempotency-Key, a bad media type, and malformed JSON are refused before anything is stored", async () => {
    expect((await reserve(valid(), null)).json).toEqual({
      code: "BAD_REQUEST",
      message: "Idempotency-Key is required",
    });
    const text = new Request("http://localhost/v1/points/reservations", {
      method: "POST",
      headers: { "content-type": "text/plain", "idempotency-key": "k" },
      body: "{}",
    });
    expect((await send(f.app, text)).status).toBe(415);
    expect((await reserve("{not json")).status).toBe(400);
    const [n] = await f.sql`select count(*)::int as n from point_reservations`;
    expect(n?.n).toBe(0);
  });
});

describe("read and cancel", () => {
  test("an unknown or malformed reservation id is 404 / 400", async () => {
    const unknown = await send(f.app, get(`/v1/points/reservations/${crypto.randomUUID()}`));
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe("NOT_FOUND");
    expect((await send(f.app, get("/v1/points/reservations/not-a-uuid"))).status).toBe(400);
    const cancel = await send(f.app, post(`/v1/points/reservations/${crypto.randomUUID()}/cancel`, undefined));
    expect(cancel.status).toBe(404);
  });

  test("PENDING → CANCELLED (200, replayed), which never executes; a second cancel key is 409", async () => {
    const r = await reserve(valid({ execute_at: inMs(300) }));
    const path = `/v1/points/reservations/${r.json.reservation_id}/cancel`;
    const cancelled = await send(f.app, post(path, undefined, "c1"));
    expect(cancelled.status).toBe(200);
    expect(cancelled.json.status).toBe("CANCELLED");
    expect((await send(f.app, post(path, undefined, "c1"))).text, "a replay").toBe(cancelled.text);
    const late = await send(f.app, post(path, undefined, "c2"));
    expect(late.status).toBe(409);
    expect(late.json.code).toBe("RESERVATION_STATE_CONFLICT");

    const replica = createReplica(f.sql, "r1");
    await Bun.sleep(400);
    await replica.scheduler.runOnce();
    const read = await send(f.app, get(`/v1/points/reservations/${r.json.reservation_id}`));
    expect(read.json.status, "a cancelled reservation never executes").toBe("CANCELLED");
  });

  test("a DONE reservation shows executed_at and transaction_id, and cannot be cancelled", async () => {
    const r = await reserve(valid({ execute_at: inMs(-1) }));
    await createReplica(f.sql, "r1").scheduler.runOnce();
    const read = await send(f.app, get(`/v1/points/reservations/${r.json.reservation_id}`));
    expect(read.json.status).toBe("DONE");
    expect(typeof read.json.executed_at).toBe("string");
    expect(typeof read.json.transaction_id).toBe("string");
    const cancel = await send(f.app, post(`/v1/points/reservations/${r.json.reservation_id}/cancel`, undefined));
    expect(cancel.status).toBe(409);
    expect(String(cancel.json.message)).toContain("DONE");
  });
});

describe("balance and ledger", () => {
  test("an unknown user has balance 0; a user's ledger is newest first and paged by cursor", async () => {
    const none = await send(f.app, get("/v1/users/nobody/points"));
    expect(none.json).toEqual({ user_id: "nobody", balance: 0, transactions: [], next_cursor: null });

    for (let i = 1; i <= 5; i++) await reserve(valid({ point_amount: i, execute_at: inMs(-1) }));
    await createReplica(f.sql, "r1").scheduler.runOnce();
    const seen: unknown[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await send(f.app, get(`/v1/users/u1/points?limit=2${cursor ? `&cursor=${cursor}` : ""}`));
      expect(page.status).toBe(200);
      expect(page.json.balance).toBe(15);
      seen.push(...(page.json.transactions as unknown[]));
      cursor = page.json.next_cursor as string | null;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(5);
    const times = seen.map((t) => (t as { created_at: string }).created_at);
    expect(times, "newest first").toEqual([...times].sort().reverse());
  });

  const UUID = "a4da5b4a-a9d1-42c5-a6e5-4d60acc5a44e";
  test.each([
    "limit=0",
    "limit=1001",
    "limit=x",
    "cursor=%%%",
    "cursor=bm90LWEtY3Vyc29y",
    `cursor=${encodeCursor(["yesterday", UUID])}`,
    `cursor=${encodeCursor(["2026-01-01T00:00:00.000Z", "not-a-uuid"])}`,
    `cursor=${encodeCursor([UUID])}`,
    `cursor=${encodeCursor(["0000-01-01T00:00:00.000Z", UUID])}`,
    `cursor=${encodeCursor(["2026-02-30T00:00:00.000Z", UUID])}`,
  ])("?%s → 400", async (query) => {
    expect((await send(f.app, get(`/v1/users/u1/points?${query}`))).status).toBe(400);
  });
});

test("scopes: write to reserve and cancel, read to read; no token is 401", async () => {
  const token = (name: string, scope: Scope) => ({ name, digest: sha256(`${name}-secret`), scopes: new Set([scope]) });
  const app = createApp({
    sql: f.sql,
    log: silentLogger,
    now: () => new Date(),
    idempotencyTtlHours: 24,
    auth: { disabled: false, tokens: [token("reader", "read"), token("writer", "write")], metricsPublic: false },
  });
  const as = (name: string, request: Request) => {
    request.headers.set("authorization", `Bearer ${name}-secret`);
    return send(app, request);
  };
  expect((await send(app, post("/v1/points/reservations", valid()))).status).toBe(401);
  expect((await as("reader", post("/v1/points/reservations", valid()))).status).toBe(403);
  const made = await as("writer", post("/v1/points/reservations", valid()));
  expect(made.status).toBe(201);
  expect((await as("writer", get(`/v1/points/reservations/${made.json.reservation_id}`))).status).toBe(403);
  expect((await as("reader", get(`/v1/points/reservations/${made.json.reservation_id}`))).status).toBe(200);
  expect((await as("reader", get("/v1/users/u1/points"))).status).toBe(200);
  expect(
    (await as("reader", post(`/v1/points/reservations/${made.json.reservation_id}/cancel`, undefined))).status,
  ).toBe(403);
});

test("a reservation belongs to no caller: another write caller may cancel it, and the audit names who did", async () => {
  // The `write` scope is the unit of authority, as for grants and revokes (docs/security.md): the callers are trusted
  // back-end systems, and the audit row is the record of which one acted.
  const token = (name: string) => ({ name, digest: sha256(`${name}-secret`), scopes: new Set<Scope>(["write"]) });
  const app = createApp({
    sql: f.sql,
    log: silentLogger,
    now: () => new Date(),
    idempotencyTtlHours: 24,
    auth: { disabled: false, tokens: [token("shop"), token("support")], metricsPublic: false },
  });
  const as = (name: string, request: Request) => {
    request.headers.set("authorization", `Bearer ${name}-secret`);
    return send(app, request);
  };
  const made = await as("shop", post("/v1/points/reservations", valid()));
  expect(made.status).toBe(201);
  const cancelled = await as("support", post(`/v1/points/reservations/${made.json.reservation_id}/cancel`, undefined));
  expect(cancelled.status, cancelled.text).toBe(200);
  expect(cancelled.json.status).toBe("CANCELLED");
  const audit = await f.sql`
    select action, caller from point_audit where reservation_id = ${made.json.reservation_id as string} order by occurred_at`;
  expect(audit.map((a) => [a.action, a.caller])).toEqual([
    ["RESERVE", "shop"],
    ["CANCEL", "support"],
  ]);
});

describe("the balance cap (2^53 − 1)", () => {
  const MAX = 9_007_199_254_740_991n;
  const setBalance = (userId: string, balance: bigint) =>
    f.sql`insert into point_balances (user_id, balance, updated_at) values (${userId}, ${balance.toString()}, now())`;

  test("a reservation that would take the balance past it is 409 POINTS_BALANCE_LIMIT, stored like any reply", async () => {
    await setBalance("u-rich", MAX - 50n);
    const key = crypto.randomUUID();
    const body = valid({ user_id: "u-rich", point_amount: 51 });
    const refused = await reserve(body, key);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json.code).toBe("POINTS_BALANCE_LIMIT");
    expect((await reserve(body, key)).text, "replayed").toBe(refused.text);
    expect((await reserve(valid({ user_id: "u-rich", point_amount: 50 }))).status, "up to the cap exactly").toBe(201);
    expect((await f.sql`select count(*)::int as n from point_reservations where user_id = 'u-rich'`)[0]?.n).toBe(1);
  });

  test("GET /v1/users/{id}/points shows the balance exactly, digit for digit", async () => {
    await setBalance("u-max", MAX);
    const reply = await send(f.app, get("/v1/users/u-max/points"));
    expect(reply.text).toContain(`"balance":${MAX}`);
  });

  test("the database refuses a balance past it, so no execution can grant past it", async () => {
    await setBalance("u-over", MAX);
    const error = await f.sql`update point_balances set balance = balance + 1 where user_id = 'u-over'`.catch((e) => e);
    expect(error?.code, "a check violation").toBe("23514");
  });
});
