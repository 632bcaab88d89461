// Grant, revoke and list through the HTTP app on a real database: the state machine, what one command writes, and
// idempotent replay.
import { describe, expect, test } from "bun:test";
import { requestHash } from "../../src/entitlement/features/entitlements/hash.ts";
import { inlineSchemas } from "../../tools/compat.ts";
import { commandCount, commandRequest, countRows, send, useApi, vectorBody } from "./api.helpers.ts";

const f = useApi("ent_cmd", { resetEach: true });

const grant = (key: string, body: object = vectorBody, headers: Record<string, string> = {}) =>
  send(f.app, commandRequest("grants", body as Record<string, unknown>, { "idempotency-key": key, ...headers }));
const revoke = (key: string, body: object = vectorBody) =>
  send(f.app, commandRequest("revokes", body as Record<string, unknown>, { "idempotency-key": key }));

describe("a successful grant", () => {
  test("answers ACTIVE v0 and commits the entitlement, audit, outbox and idempotency rows together", async () => {
    const now = new Date(Date.now() - 60_000);
    f.clock.at = now;
    const reply = await grant("idem-1", { ...vectorBody, unknown_field: [1] }, { "x-trace-id": "trace-1" });
    expect(reply.status).toBe(200);
    expect(reply.contentType).toStartWith("application/json");
    expect(reply.text).toBe(
      `{"user_id":"user-1","stock_keeping_unit":"sku-1","status":"ACTIVE","version":0,"updated_at":"${now.toISOString()}"}`,
    );
    expect(await countRows(f.sql)).toEqual({ entitlements: 1, audit: 1, outbox: 1, idempotency: 1 });

    const [entitlement] = await f.sql`select * from entitlements`;
    expect(entitlement).toMatchObject({ status: "ACTIVE", granted_at: now, revoked_at: null, source: "purchase" });
    expect(entitlement?.source_id).toBe("purchase-1");
    const [audit] = await f.sql`select * from entitlement_audit`;
    expect(audit).toMatchObject({ action: "GRANT", request_id: "idem-1", trace_id: "trace-1", occurred_at: now });
    expect(audit?.detail, "the audit detail is the request without unknown fields").toEqual(vectorBody);
    const [event] = await f.sql`select * from outbox_events`;
    expect(event).toMatchObject({
      event_type: "EntitlementGranted",
      aggregate_key: "user-1:sku-1",
      status: "PENDING",
      attempt_count: 0,
      next_retry_at: null,
      created_at: now,
    });
    expect(event?.payload).toEqual({
      event_id: event?.event_id,
      event_type: "EntitlementGranted",
      occurred_at: now.toISOString(),
      user_id: "user-1",
      stock_keeping_unit: "sku-1",
      source: "purchase",
      source_id: "purchase-1",
      version: 0,
      trace_id: "trace-1",
    });
    const [idem] = await f.sql`select * from idempotency_keys`;
    expect(idem, "the record keeps the facts the reply is made of").toMatchObject({
      caller: "",
      idem_key: "idem-1",
      response_code: 200,
      response_body: null,
      response_facts: { kind: "changed", items: [{ stock_keeping_unit: "sku-1", version: 0, changed: true }] },
    });
    expect(new Date(idem?.response_facts.items[0].updated_at)).toEqual(now);
    expect(idem?.request_hash, "the stored hash is the Java original's vector").toBe(
      "11b37deade60a82ca76824417f43e8c150dcd5722cf107fe26cb4f6558763ff9",
    );
    expect(idem?.expires_at).toEqual(new Date(now.getTime() + 24 * 3_600_000));
    expect(await commandCount(f.registry, "GRANT", "success")).toBe(1);
  });

  test("without a usable X-Trace-Id the event gets a random UUID", async () => {
    await grant("idem-1", vectorBody, { "x-trace-id": "t".repeat(129) });
    const [event] = await f.sql`select payload->>'trace_id' as trace_id from outbox_events`;
    expect(event?.trace_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe("accepted input at the limits", () => {
  test("application/*+json with a charset, a 16 KiB body and 128/64-character fields are accepted", async () => {
    const body = {
      user_id: "u".repeat(128),
      stock_keeping_unit: "s".repeat(128),
      reason: "r".repeat(64),
      purchase_id: "p".repeat(128),
    };
    const exact = JSON.stringify({ ...body, padding: "" });
    const padded = JSON.stringify({ ...body, padding: "x".repeat(16 * 1024 - exact.length) });
    expect(new TextEncoder().encode(padded).length, "the body is exactly at the limit").toBe(16 * 1024);
    const headers = { "idempotency-key": "~".repeat(255), "content-type": "application/vnd.api+json; charset=utf-8" };
    const reply = await send(f.app, commandRequest("grants", padded, headers));
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ user_id: body.user_id, status: "ACTIVE" });
  });
});

describe("state machine", () => {
  test("grant → revoke → grant moves ACTIVE v0 → REVOKED v1 → ACTIVE v2, one event each", async () => {
    expect((await grant("k1")).json).toMatchObject({ status: "ACTIVE", version: 0 });
    expect((await revoke("k2")).json).toMatchObject({ status: "REVOKED", version: 1 });
    expect((await grant("k3")).json).toMatchObject({ status: "ACTIVE", version: 2 });
    const events =
      await f.sql`select event_type, (payload->>'version')::int as version from outbox_events order by created_at, (payload->>'version')::int`;
    expect(events.map((e) => `${e.event_type}:${e.version}`)).toEqual([
      "EntitlementGranted:0",
      "EntitlementRevoked:1",
      "EntitlementGranted:2",
    ]);
  });

  test("revoking a pair that was never granted answers REVOKED v0 with an event and an audit row", async () => {
    const reply = await revoke("k1");
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ status: "REVOKED", version: 0 });
    expect(await countRows(f.sql)).toEqual({ entitlements: 1, audit: 1, outbox: 1, idempotency: 1 });
    const [row] = await f.sql`select granted_at from entitlements`;
    expect(row?.granted_at, "a never-granted pair has no granted_at").toBeNull();
  });

  test("a grant of an ACTIVE pair is 409 already ACTIVE, stored, and replayed", async () => {
    await grant("k1");
    const conflict = await grant("k2");
    expect(conflict.status).toBe(409);
    expect(conflict.text).toBe('{"code":"ENTITLEMENT_STATE_CONFLICT","message":"already ACTIVE"}');
    expect(await countRows(f.sql), "a conflict writes only its idempotency record").toEqual({
      entitlements: 1,
      audit: 1,
      outbox: 1,
      idempotency: 2,
    });
    const [stored] = await f.sql`select response_code, response_facts from idempotency_keys where idem_key = 'k2'`;
    expect(stored).toEqual({ response_code: 409, response_facts: { kind: "unchanged" } });
    await revoke("k3");
    const replay = await grant("k2");
    expect(replay.status, "the stored 409 is replayed although a grant would now succeed").toBe(409);
    expect(replay.text).toBe(conflict.text);
    expect(await commandCount(f.registry, "GRANT", "conflict")).toBeGreaterThanOrEqual(1);
  });

  test("a revoke of a REVOKED pair is 409 already REVOKED", async () => {
    await revoke("k1");
    const conflict = await revoke("k2");
    expect(conflict.status).toBe(409);
    expect(conflict.json).toEqual({ code: "ENTITLEMENT_STATE_CONFLICT", message: "already REVOKED" });
  });
});

describe("idempotency", () => {
  test("the same key and request replays the first reply byte for byte, with no new effect", async () => {
    const first = await grant("k1", vectorBody, { "x-trace-id": "a" });
    const before = await countRows(f.sql);
    const reusedBefore = await commandCount(f.registry, "GRANT", "idempotency_reused");
    f.clock.at = new Date(Date.now() + 5_000);
    const again = await grant(
      "k1",
      { purchase_id: "purchase-1", reason: "purchase", stock_keeping_unit: "sku-1", user_id: "user-1" },
      { "x-trace-id": "b" },
    );
    expect(again.status).toBe(200);
    expect(again.text, "a replay is byte-identical, whatever the field order and trace id").toBe(first.text);
    expect(await countRows(f.sql), "a replay writes nothing").toEqual(before);
    expect(await commandCount(f.registry, "GRANT", "idempotency_reused")).toBe(reusedBefore + 1);
  });

  test("a stored 200 is replayed even after the state changed", async () => {
    const first = await grant("k1");
    await revoke("k2");
    expect((await grant("k1")).text).toBe(first.text);
  });

  test("the same key with a different request is 409 IDEMPOTENCY_KEY_CONFLICT and is not stored", async () => {
    await grant("k1");
    const before = await countRows(f.sql);
    const otherPurchase = await grant("k1", { ...vectorBody, purchase_id: "purchase-2" });
    expect(otherPurchase.status).toBe(409);
    expect(otherPurchase.text).toBe('{"code":"IDEMPOTENCY_KEY_CONFLICT","message":"Idempotency-Key conflict"}');
    const otherAction = await revoke("k1");
    expect(otherAction.json.code, "the action is part of the request hash").toBe("IDEMPOTENCY_KEY_CONFLICT");
    expect(await countRows(f.sql)).toEqual(before);
    const [stored] = await f.sql`select response_code from idempotency_keys where idem_key = 'k1'`;
    expect(stored?.response_code, "the original record is kept").toBe(200);
    expect(await commandCount(f.registry, "GRANT", "conflict")).toBeGreaterThanOrEqual(1);
  });

  test("a stored IDEMPOTENCY_KEY_CONFLICT with a matching hash is replayed as stored", async () => {
    const hash = requestHash({ action: "GRANT", ...vectorBody });
    await f.sql`
      insert into idempotency_keys (caller, idem_key, request_hash, response_code, response_body, expires_at)
      values ('', 'k1', ${hash}, 409, ${f.sql.json({ message: "stored message", code: "IDEMPOTENCY_KEY_CONFLICT" })},
              now() + interval '1 hour')`;
    const reply = await grant("k1");
    expect(reply.status).toBe(409);
    expect(reply.text).toBe('{"code":"IDEMPOTENCY_KEY_CONFLICT","message":"stored message"}');
    expect((await countRows(f.sql)).entitlements, "a replay never runs the command").toBe(0);
  });

  test("an expired key is reusable for a different request, and its record is overwritten", async () => {
    f.clock.at = new Date(Date.now() - 25 * 3_600_000);
    await grant("k1");
    f.clock.at = undefined;
    const reply = await revoke("k1", { ...vectorBody, reason: "refund" });
    expect(reply.status, "an expired key is treated as new").toBe(200);
    expect(reply.json).toMatchObject({ status: "REVOKED", version: 1 });
    const records = await f.sql`
      select request_hash, (response_facts #>> '{items,0,version}')::int as version from idempotency_keys`;
    expect([...records], "the revoke's record, at the version it left").toEqual([
      { request_hash: requestHash({ action: "REVOKE", ...vectorBody, reason: "refund" }), version: 1 },
    ]);
  });
});

describe("list", () => {
  test("newest first, SKU breaking ties, ACTIVE and REVOKED alike; an unknown user has none", async () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 17, 0, 0, s));
    const body = (sku: string) => ({ ...vectorBody, stock_keeping_unit: sku });
    f.clock.at = at(1);
    await grant("a", body("sku-old"));
    f.clock.at = at(3);
    await grant("b", body("sku-b"));
    await revoke("c", body("sku-a"));
    f.clock.at = at(2);
    await grant("d", body("sku-mid"));
    const reply = await send(f.app, new Request("http://localhost/v1/users/user-1/entitlements"));
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      user_id: "user-1",
      entitlements: [
        {
          stock_keeping_unit: "sku-a",
          status: "REVOKED",
          version: 0,
          updated_at: at(3).toISOString(),
          expires_at: null,
        },
        {
          stock_keeping_unit: "sku-b",
          status: "ACTIVE",
          version: 0,
          updated_at: at(3).toISOString(),
          expires_at: null,
        },
        {
          stock_keeping_unit: "sku-mid",
          status: "ACTIVE",
          version: 0,
          updated_at: at(2).toISOString(),
          expires_at: null,
        },
        {
          stock_keeping_unit: "sku-old",
          status: "ACTIVE",
          version: 0,
          updated_at: at(1).toISOString(),
          expires_at: null,
        },
      ],
      next_cursor: null,
    });
    const unknown = await send(f.app, new Request("http://localhost/v1/users/nobody/entitlements"));
    expect(unknown).toMatchObject({ status: 200, json: { user_id: "nobody", entitlements: [], next_cursor: null } });
  });

  test("a URL-encoded user id is decoded", async () => {
    await grant("k1", { ...vectorBody, user_id: "user/ü 1" });
    const reply = await send(f.app, new Request("http://localhost/v1/users/user%2F%C3%BC%201/entitlements"));
    expect(reply.json).toMatchObject({ user_id: "user/ü 1", entitlements: [{ stock_keeping_unit: "sku-1" }] });
  });
});

describe("service endpoints", () => {
  test("/readyz is 200 while the database answers", async () => {
    expect(await send(f.app, new Request("http://localhost/readyz"))).toMatchObject({
      status: 200,
      json: { status: "UP" },
    });
  });

  test("/openapi.json lists the three routes with their request and response schemas", async () => {
    // Named component schemas are read through their references, as a client generator reads them.
    const doc = inlineSchemas((await send(f.app, new Request("http://localhost/openapi.json"))).json) as {
      paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>>;
    };
    for (const path of ["/v1/entitlements/grants", "/v1/entitlements/revokes"]) {
      const post = doc.paths[path]?.post;
      expect(post?.requestBody, `${path} documents its body`).toMatchObject({
        content: {
          "application/json": { schema: { required: ["user_id", "stock_keeping_unit", "reason", "purchase_id"] } },
        },
      });
      expect(Object.keys(post?.responses ?? {})).toEqual(expect.arrayContaining(["200", "400", "409", "413", "415"]));
    }
    const list = doc.paths["/v1/users/{user_id}/entitlements"]?.get;
    expect(list?.responses?.["200"]).toMatchObject({
      content: { "application/json": { schema: { required: ["user_id", "entitlements", "next_cursor"] } } },
    });
  });

  test("/metrics exposes entitlement_command_total", async () => {
    await grant("k1");
    const response = await f.app.handle(new Request("http://localhost/metrics"));
    expect(await response.text()).toContain('entitlement_command_total{action="GRANT",result="success"');
  });
});
