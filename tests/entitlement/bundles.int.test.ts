// POST /v1/entitlements/bundle-grants: 1–100 items of one user in one transaction under one
// idempotency record; items not ACTIVE are granted (one audit row and one event each), the others left as they are.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { inlineSchemas } from "../../tools/compat.ts";
import { type ApiFixture, commandRequest, countRows, openApi, send, vectorBody } from "./api.helpers.ts";

let f: ApiFixture;
beforeAll(async () => {
  // A loaded machine may keep 10 bundles on the 10 slots for over the default 1 s queue timeout; a 503 must mean a
  // stuck lock (the 5 s statement timeout), not a long queue.
  f = await openApi("ent_bundle", { limits: { queueTimeoutMs: 30_000 } });
});
afterAll(() => f.close());
beforeEach(async () => {
  f.clock.at = undefined;
  await f.reset();
});

const bundle = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  send(
    f.app,
    new Request("http://localhost/v1/entitlements/bundle-grants", {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key, ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    }),
  );
const bundleOf = (skus: unknown, user = "user-1") => ({
  user_id: user,
  stock_keeping_units: skus,
  reason: "store",
  purchase_id: "order-1",
});
const command = (action: "grants" | "revokes", key: string, sku: string) =>
  send(f.app, commandRequest(action, { ...vectorBody, stock_keeping_unit: sku }, { "idempotency-key": key }));

describe("a bundle grant", () => {
  test("grants the items not ACTIVE, leaves the ACTIVE one, reports each in request order with changed", async () => {
    await command("grants", "g-a", "a");
    await command("grants", "g-b", "b");
    await command("revokes", "r-b", "b");
    const now = new Date(Date.now() - 30_000);
    f.clock.at = now;
    const reply = await bundle("bundle-1", bundleOf(["c", "a", "b"]), { "x-trace-id": "trace-b" });
    expect(reply.status).toBe(200);
    expect(reply.json.user_id).toBe("user-1");
    expect(reply.json.items).toEqual([
      { stock_keeping_unit: "c", status: "ACTIVE", version: 0, updated_at: now.toISOString(), changed: true },
      { stock_keeping_unit: "a", status: "ACTIVE", version: 0, updated_at: expect.any(String), changed: false },
      { stock_keeping_unit: "b", status: "ACTIVE", version: 2, updated_at: now.toISOString(), changed: true },
    ]);
    expect(reply.text.startsWith('{"user_id":"user-1","items":[{"stock_keeping_unit":"c","status"')).toBe(true);

    const audit =
      await f.sql`select stock_keeping_unit, action, version::int, request_id, trace_id from entitlement_audit
      where request_id = 'bundle-1' order by stock_keeping_unit`;
    expect(audit.map((a) => [a.stock_keeping_unit, a.action, a.version, a.trace_id])).toEqual([
      ["b", "GRANT", 2, "trace-b"],
      ["c", "GRANT", 0, "trace-b"],
    ]);
    const events = await f.sql`select event_type, aggregate_key, payload from outbox_events
      where created_at = ${now} order by aggregate_key`;
    expect(events.map((e) => [e.event_type, e.aggregate_key, e.payload.version, e.payload.source_id])).toEqual([
      ["EntitlementGranted", "user-1:b", 2, "order-1"],
      ["EntitlementGranted", "user-1:c", 0, "order-1"],
    ]);
    expect(events.every((e) => e.payload.trace_id === "trace-b" && e.payload.source === "store")).toBe(true);
    expect(await countRows(f.sql)).toEqual({ entitlements: 3, audit: 5, outbox: 5, idempotency: 4 });
  });

  test("same key and body → the stored reply byte for byte, nothing written; another body → key conflict", async () => {
    const first = await bundle("bundle-2", bundleOf(["x", "y"]));
    await command("revokes", "r-x", "x");
    const before = await countRows(f.sql);
    const again = await bundle("bundle-2", bundleOf(["x", "y"]));
    expect(again.status).toBe(200);
    expect(again.text, "a replay is the first reply, not the current state").toBe(first.text);
    expect(await countRows(f.sql)).toEqual(before);

    for (const other of [bundleOf(["y", "x"]), bundleOf(["x"]), { ...bundleOf(["x", "y"]), reason: "gift" }]) {
      const conflict = await bundle("bundle-2", other);
      expect(conflict.status).toBe(409);
      expect(conflict.json).toEqual({ code: "IDEMPOTENCY_KEY_CONFLICT", message: "Idempotency-Key conflict" });
    }
    const grantWithKey = await send(
      f.app,
      commandRequest("grants", { ...vectorBody, stock_keeping_unit: "x" }, { "idempotency-key": "bundle-2" }),
    );
    expect(grantWithKey.status, "a grant cannot reuse a bundle's key").toBe(409);
    expect(await countRows(f.sql)).toEqual(before);
  });

  test("every item already ACTIVE → 200, all unchanged, no event; the reply is still remembered", async () => {
    await bundle("bundle-3", bundleOf(["p", "q"]));
    const before = await countRows(f.sql);
    const reply = await bundle("bundle-4", bundleOf(["q", "p"]));
    expect(reply.status).toBe(200);
    expect((reply.json.items as { changed: boolean }[]).map((i) => i.changed)).toEqual([false, false]);
    expect(await countRows(f.sql)).toEqual({ ...before, idempotency: before.idempotency + 1 });
  });

  test("bad input → 400 with the first problem, nothing written", async () => {
    const cases: [unknown, string][] = [
      [{ ...bundleOf(["a"]), stock_keeping_units: undefined }, "stock_keeping_units is required"],
      [bundleOf("a"), "stock_keeping_units must be an array"],
      [bundleOf([]), "stock_keeping_units must hold 1 to 100 items"],
      [bundleOf(Array.from({ length: 101 }, (_, i) => `s${i}`)), "stock_keeping_units must hold 1 to 100 items"],
      [bundleOf(["a", "b", "a"]), "stock_keeping_units must be distinct"],
      [bundleOf(["a", 7]), "stock_keeping_units[1] must be a string"],
      [bundleOf(["a", " "]), "stock_keeping_units[1] is required"],
      [bundleOf(["s".repeat(129)]), "stock_keeping_units[0] must be at most 128 characters"],
      [{ ...bundleOf(["a"]), user_id: "" }, "user_id is required"],
      [{ ...bundleOf(["a"]), purchase_id: undefined }, "purchase_id is required"],
      ["[1]", "request body is invalid"],
    ];
    for (const [body, message] of cases) {
      const reply = await bundle("bad", body);
      expect(reply.status, message).toBe(400);
      expect(reply.json).toEqual({ code: "BAD_REQUEST", message });
    }
    const noKey = await bundle("", bundleOf(["a"]));
    expect(noKey.json).toEqual({ code: "BAD_REQUEST", message: "Idempotency-Key is required" });
    expect(await countRows(f.sql)).toEqual({ entitlements: 0, audit: 0, outbox: 0, idempotency: 0 });
  });

  test("100 items in one bundle: one statement each way, every item granted", async () => {
    const skus = Array.from({ length: 100 }, (_, i) => `item-${i}`);
    const reply = await bundle("bundle-100", bundleOf(skus));
    expect(reply.status).toBe(200);
    expect((reply.json.items as { changed: boolean }[]).filter((i) => i.changed)).toHaveLength(100);
    expect(await countRows(f.sql)).toEqual({ entitlements: 100, audit: 100, outbox: 100, idempotency: 1 });
  });
});

describe("concurrent overlapping bundles", () => {
  test("20 bundles of one user over shared items: no deadlock, each item granted exactly once", async () => {
    const pool = Array.from({ length: 24 }, (_, i) => `shared-${String(i).padStart(2, "0")}`);
    // Each bundle takes 12 items in its own shuffled order: without one lock order, two of them would deadlock.
    const bundles = Array.from({ length: 20 }, (_, b) => {
      const picked = pool.filter((_, i) => (i * 7 + b * 5) % 24 < 12);
      return picked.sort(
        (x, y) => ((x.charCodeAt(8) * (b + 3)) % 11) - ((y.charCodeAt(8) * (b + 3)) % 11) || x.localeCompare(y),
      );
    });
    const replies = await Promise.all(bundles.map((skus, b) => bundle(`conc-${b}`, bundleOf(skus, "racer"))));
    expect(
      replies.map((r) => r.status),
      "every bundle succeeds (a deadlock would be 500, a stuck lock 503)",
    ).toEqual(Array(20).fill(200));
    const grantedBy = new Map<string, number>();
    for (const reply of replies) {
      for (const item of reply.json.items as { stock_keeping_unit: string; changed: boolean; status: string }[]) {
        expect(item.status).toBe("ACTIVE");
        if (item.changed) grantedBy.set(item.stock_keeping_unit, (grantedBy.get(item.stock_keeping_unit) ?? 0) + 1);
      }
    }
    const union = new Set(bundles.flat());
    expect([...grantedBy.keys()].sort(), "every item of some bundle is reported changed by one").toEqual(
      [...union].sort(),
    );
    expect(
      [...grantedBy.values()].every((n) => n === 1),
      "no item is granted twice",
    ).toBe(true);
    const [counts] = await f.sql`select count(*)::int as events, count(distinct aggregate_key)::int as keys,
      (select count(*)::int from entitlements where user_id = 'racer' and version = 0) as v0 from outbox_events`;
    expect(counts).toEqual({ events: union.size, keys: union.size, v0: union.size });
  });
});

describe("/openapi.json", () => {
  test("documents the bundle, check and history routes from the schemas that validate them", async () => {
    // Named component schemas are read through their references, as a client generator reads them.
    const doc = inlineSchemas((await send(f.app, new Request("http://localhost/openapi.json"))).json) as {
      paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>>;
    };
    const post = doc.paths["/v1/entitlements/bundle-grants"]?.post;
    expect(post?.requestBody).toMatchObject({
      content: {
        "application/json": {
          schema: { required: ["user_id", "stock_keeping_units", "reason", "purchase_id"] },
        },
      },
    });
    expect(Object.keys(post?.responses ?? {})).toEqual(expect.arrayContaining(["200", "400", "409", "413", "415"]));
    const check = doc.paths["/v1/users/{user_id}/entitlements/{stock_keeping_unit}"]?.get;
    expect(Object.keys(check?.responses ?? {})).toEqual(expect.arrayContaining(["200", "404"]));
    const history = doc.paths["/v1/users/{user_id}/entitlements/{stock_keeping_unit}/history"]?.get;
    expect(history?.responses?.["200"]).toMatchObject({
      content: {
        "application/json": { schema: { required: ["user_id", "stock_keeping_unit", "changes", "next_cursor"] } },
      },
    });
  });
});
