// GET /v1/users/{user_id}/entitlements/{stock_keeping_unit}: the current state of one entitlement,
// its version as the ETag, 304 for a poller that has it, 404 for a pair never granted.
import { describe, expect, test } from "bun:test";
import { commandRequest, send, useApi, vectorBody } from "./api.helpers.ts";

const f = useApi("ent_check");

const get = (path: string, headers: Record<string, string> = {}) =>
  f.app.handle(new Request(`http://localhost${path}`, { headers }));
const command = (action: "grants" | "revokes", key: string, body: object) =>
  send(f.app, commandRequest(action, body as Record<string, unknown>, { "idempotency-key": key }));

describe("checking one entitlement", () => {
  test("answers the current state with expires_at and ETag = version, then follows a revoke", async () => {
    const body = { ...vectorBody, user_id: "check-1" };
    const granted = await command("grants", "chk-1", body);
    expect(granted.status).toBe(200);

    const first = await get("/v1/users/check-1/entitlements/sku-1");
    expect(first.status).toBe(200);
    expect(first.headers.get("etag")).toBe('"0"');
    expect(first.headers.get("content-type")).toStartWith("application/json");
    expect(await first.json()).toEqual({
      user_id: "check-1",
      stock_keeping_unit: "sku-1",
      status: "ACTIVE",
      version: 0,
      updated_at: granted.json.updated_at,
      expires_at: null,
    });

    await command("revokes", "chk-2", body);
    const second = await get("/v1/users/check-1/entitlements/sku-1", { "if-none-match": '"0"' });
    expect(second.status, "a stale tag gets the new state, not a 304").toBe(200);
    expect(second.headers.get("etag")).toBe('"1"');
    expect(await second.json()).toMatchObject({ status: "REVOKED", version: 1 });
  });

  test("If-None-Match with the current tag (alone, in a list, weak, or *) → 304 with the tag and no body", async () => {
    await command("grants", "chk-3", { ...vectorBody, user_id: "check-2" });
    for (const tag of ['"0"', '"7", "0"', 'W/"0"', "*"]) {
      const reply = await get("/v1/users/check-2/entitlements/sku-1", { "if-none-match": tag });
      expect(reply.status, `If-None-Match: ${tag}`).toBe(304);
      expect(reply.headers.get("etag")).toBe('"0"');
      expect(await reply.text()).toBe("");
    }
  });

  test("a pair never granted → 404 NOT_FOUND, even for * (there is no current representation)", async () => {
    for (const headers of [{}, { "if-none-match": "*" }] as Record<string, string>[]) {
      const reply = await get("/v1/users/check-3/entitlements/sku-1", headers);
      expect(reply.status).toBe(404);
      expect(await reply.json()).toEqual({ code: "NOT_FOUND", message: "entitlement not found" });
    }
  });

  test("ids are decoded and checked like body fields: encoded characters work, an over-long one is 400", async () => {
    await command("grants", "chk-4", { ...vectorBody, user_id: "user 4/ü", stock_keeping_unit: "sku ü" });
    const found = await get(`/v1/users/${encodeURIComponent("user 4/ü")}/entitlements/${encodeURIComponent("sku ü")}`);
    expect(found.status).toBe(200);
    expect(await found.json()).toMatchObject({ user_id: "user 4/ü", stock_keeping_unit: "sku ü" });

    const long = await get(`/v1/users/u/entitlements/${"s".repeat(129)}`);
    expect(long.status).toBe(400);
    expect(await long.json()).toEqual({
      code: "BAD_REQUEST",
      message: "stock_keeping_unit must be at most 128 characters",
    });
  });
});
