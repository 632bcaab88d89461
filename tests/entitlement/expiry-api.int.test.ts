// Expiry through the API: expires_at on grants and bundles, extensions, and what a revoke or a
// re-grant does to an expiry. The scheduler that executes expiries is tested in expiry-scheduler.int.test.ts.
import { describe, expect, test } from "bun:test";
import { type Body, type CommandPath, commandRequest, countRows, send, useApi, vectorBody } from "./api.helpers.ts";

const f = useApi("ent_expiry_api", { resetEach: true });

const DAY = 86_400_000;
const inDays = (days: number) => new Date(Date.now() + days * DAY).toISOString();
const post = (path: CommandPath, key: string, body: Body) =>
  send(f.app, commandRequest(path, body, { "idempotency-key": key }));
const grant = (key: string, extra: object = {}) => post("grants", key, { ...vectorBody, ...extra });
const extend = (key: string, expiresAt: unknown, extra: object = {}) =>
  post("extensions", key, { ...vectorBody, expires_at: expiresAt, ...extra });
const check = async () => (await send(f.app, new Request("http://localhost/v1/users/user-1/entitlements/sku-1"))).json;
const expiryRow = async () => (await f.sql`select * from entitlement_expiries`)[0];

describe("a grant with expires_at", () => {
  test("stores it, answers it, schedules the expiry in the same transaction and carries it in the event", async () => {
    const at = "2030-01-01T09:00:00+09:00";
    const reply = await grant("e-1", { expires_at: at });
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.json), "the grant reply says when it expires").toEqual([
      "user_id",
      "stock_keeping_unit",
      "status",
      "version",
      "updated_at",
      "expires_at",
    ]);
    expect(reply.json.expires_at, "in UTC, as every timestamp").toBe("2030-01-01T00:00:00.000Z");
    expect((await check()).expires_at).toBe("2030-01-01T00:00:00.000Z");
    const list = await send(f.app, new Request("http://localhost/v1/users/user-1/entitlements"));
    expect((list.json.entitlements as { expires_at: string }[])[0]?.expires_at, "the list shows it too").toBe(
      "2030-01-01T00:00:00.000Z",
    );
    expect(await expiryRow()).toMatchObject({
      status: "PENDING",
      expires_at: new Date("2030-01-01T00:00:00Z"),
      due_at: new Date("2030-01-01T00:00:00Z"),
      attempt_count: 0,
    });
    const [event] = await f.sql`select payload from outbox_events`;
    expect(event?.payload.expires_at).toBe("2030-01-01T00:00:00.000Z");
    expect(
      Object.keys((await grant("e-1b", { stock_keeping_unit: "sku-2" })).json),
      "a grant without expiry has none",
    ).not.toContain("expires_at");
  });

  test("is part of the request: same key and expiry replays, another expiry is a key conflict", async () => {
    const first = await grant("e-2", { expires_at: "2031-05-01T00:00:00Z" });
    expect((await grant("e-2", { expires_at: "2031-05-01T00:00:00.000+00:00" })).text, "the same instant").toBe(
      first.text,
    );
    expect((await grant("e-2", { expires_at: "2031-05-02T00:00:00Z" })).json.code).toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect((await grant("e-2")).json.code, "no expiry is another request too").toBe("IDEMPOTENCY_KEY_CONFLICT");
  });

  test("the retry of a committed grant gets its stored reply even after its expiry passed", async () => {
    const at = inDays(1);
    const first = await grant("e-late", { expires_at: at });
    const bundle = { user_id: "user-1", stock_keeping_units: ["b-1"], reason: "r", purchase_id: "p", expires_at: at };
    const firstBundle = await post("bundle-grants", "b-late", bundle);
    f.clock.at = new Date(Date.now() + 2 * DAY);
    expect((await grant("e-late", { expires_at: at })).text, "a replay, not a 400").toBe(first.text);
    expect((await post("bundle-grants", "b-late", bundle)).text).toBe(firstBundle.text);
    expect((await grant("e-new", { expires_at: at })).json, "a new request with that expiry is refused").toEqual({
      code: "BAD_REQUEST",
      message: "expires_at must be in the future",
    });
  });

  test("bad expires_at → 400, nothing written", async () => {
    const cases: [unknown, string][] = [
      [17, "expires_at must be a string"],
      [
        "2030-01-01T00:00:00",
        "expires_at must be an ISO-8601 date-time with an offset, e.g. 2027-01-08T00:00:00+09:00",
      ],
      ["tomorrow", "expires_at must be an ISO-8601 date-time with an offset, e.g. 2027-01-08T00:00:00+09:00"],
      [new Date(Date.now() - 1_000).toISOString(), "expires_at must be in the future"],
      [inDays(3700), "expires_at must be at most 10 years ahead"],
    ];
    for (const [value, message] of cases) {
      const reply = await grant("bad", { expires_at: value });
      expect(reply.json, String(value)).toEqual({ code: "BAD_REQUEST", message });
    }
    expect(await countRows(f.sql)).toEqual({ entitlements: 0, audit: 0, outbox: 0, idempotency: 0 });
  });

  test("a date that does not exist, or that PostgreSQL cannot store, is 400 on every command, never a 500", async () => {
    const bundle = { user_id: "user-1", stock_keeping_units: ["b-1"], reason: "r", purchase_id: "p" };
    await grant("e-base");
    const impossible = [
      "0000-01-01T00:00:00Z",
      "0001-01-01T00:00:00+01:00",
      "2027-02-30T00:00:00+01:00",
      "2027-02-29T00:00:00Z",
      "2027-04-31T00:00:00Z",
      "2027-01-01T24:00:00Z",
      "2027-01-01T00:00:00+18:00",
    ];
    for (const value of impossible) {
      for (const reply of [
        await grant(`g-${value}`, { expires_at: value }),
        await post("bundle-grants", `b-${value}`, { ...bundle, expires_at: value }),
        await extend(`x-${value}`, value),
      ]) {
        expect(reply.status, `${value} is refused, not rolled over or a 500`).toBe(400);
        expect(reply.json.code).toBe("BAD_REQUEST");
      }
    }
    expect((await countRows(f.sql)).entitlements, "nothing but the base grant was written").toBe(1);
  });

  test("at most 10 calendar years ahead: the day after is refused, though within 3,660 days", async () => {
    f.clock.at = new Date("2026-03-01T00:00:00Z");
    expect((await grant("y-1", { expires_at: "2036-03-01T00:00:00Z" })).status, "exactly 10 years").toBe(200);
    const reply = await grant("y-2", { expires_at: "2036-03-02T00:00:00Z" });
    expect(reply.json).toEqual({ code: "BAD_REQUEST", message: "expires_at must be at most 10 years ahead" });
  });

  test("a revoke clears the expiry; a re-grant sets a new one or none", async () => {
    await grant("e-3", { expires_at: inDays(5) });
    await post("revokes", "r-3", vectorBody);
    expect((await check()).expires_at, "a REVOKED entitlement has no expiry").toBeNull();
    const later = inDays(9);
    await grant("e-4", { expires_at: later });
    expect((await check()).expires_at).toBe(later);
    expect((await expiryRow())?.due_at, "the re-grant reschedules the expiry").toEqual(new Date(later));
    await post("revokes", "r-4", vectorBody);
    await grant("e-5");
    expect((await check()).expires_at, "a re-grant without expires_at never expires").toBeNull();
  });

  test("a bundle sets it on the items it grants and schedules each; an item left ACTIVE keeps its own", async () => {
    await grant("e-6", { stock_keeping_unit: "kept" });
    const at = inDays(30);
    const reply = await post("bundle-grants", "b-6", {
      user_id: "user-1",
      stock_keeping_units: ["kept", "new-1", "new-2"],
      reason: "store",
      purchase_id: "o-1",
      expires_at: at,
    });
    expect(reply.status).toBe(200);
    const rows = await f.sql`select stock_keeping_unit, expires_at from entitlements order by 1`;
    expect(rows.map((r) => [r.stock_keeping_unit, r.expires_at?.toISOString() ?? null])).toEqual([
      ["kept", null],
      ["new-1", at],
      ["new-2", at],
    ]);
    const scheduled =
      await f.sql`select stock_keeping_unit from entitlement_expiries where status = 'PENDING' order by 1`;
    expect(scheduled.map((r) => r.stock_keeping_unit)).toEqual(["new-1", "new-2"]);
  });
});

describe("an extension", () => {
  test("moves an ACTIVE entitlement's expiry later: version + 1, audit EXTEND, event EntitlementExtended", async () => {
    await grant("x-1", { expires_at: inDays(5) });
    const later = inDays(40);
    const reply = await extend("x-2", later, { reason: "renewal", purchase_id: "p-2" });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      user_id: "user-1",
      stock_keeping_unit: "sku-1",
      status: "ACTIVE",
      version: 1,
      updated_at: expect.any(String),
      expires_at: later,
    });
    expect((await check()).expires_at).toBe(later);
    expect(await expiryRow()).toMatchObject({ status: "PENDING", due_at: new Date(later) });
    const [audit] = await f.sql`select action, version::int, source_id from entitlement_audit where action = 'EXTEND'`;
    expect(audit).toEqual({ action: "EXTEND", version: 1, source_id: "p-2" });
    const [event] = await f.sql`select event_type, payload from outbox_events where event_type = 'EntitlementExtended'`;
    expect(event?.payload).toMatchObject({ event_type: "EntitlementExtended", version: 1, expires_at: later });

    const again = await extend("x-2", later, { reason: "renewal", purchase_id: "p-2" });
    expect(again.text, "a replay is the stored reply").toBe(reply.text);
    expect((await extend("x-2", inDays(41), { reason: "renewal", purchase_id: "p-2" })).json.code).toBe(
      "IDEMPOTENCY_KEY_CONFLICT",
    );
  });

  test("refused with 409 ENTITLEMENT_STATE_CONFLICT (and remembered): earlier, equal, no expiry, not ACTIVE", async () => {
    const current = inDays(10);
    expect((await extend("y-0", inDays(20))).json).toEqual({
      code: "ENTITLEMENT_STATE_CONFLICT",
      message: "not ACTIVE",
    });
    await grant("y-1", { expires_at: current });
    for (const [key, at] of [
      ["y-2", inDays(9)],
      ["y-3", current],
    ] as const) {
      const reply = await extend(key, at);
      expect(reply.status).toBe(409);
      expect(reply.json).toEqual({
        code: "ENTITLEMENT_STATE_CONFLICT",
        message: `expires_at must be later than the current one (${current})`,
      });
    }
    await post("revokes", "y-4", vectorBody);
    expect((await extend("y-5", inDays(20))).json.message).toBe("not ACTIVE");
    await grant("y-6");
    const target = inDays(20);
    expect((await extend("y-7", target)).json.message).toBe("the entitlement has no expiry to extend");
    const before = await countRows(f.sql);
    expect((await extend("y-7", target)).json.message, "the 409 is replayed").toBe(
      "the entitlement has no expiry to extend",
    );
    expect(await countRows(f.sql)).toEqual(before);
  });

  test("bad input → 400: expires_at required and checked like a grant's", async () => {
    const missing = await post("extensions", "z-1", vectorBody);
    expect(missing.json).toEqual({ code: "BAD_REQUEST", message: "expires_at is required" });
    expect((await extend("z-2", "2030-01-01")).json.code).toBe("BAD_REQUEST");
    const noKey = await send(f.app, commandRequest("grants", vectorBody));
    expect(noKey.status).toBe(400);
  });
});
