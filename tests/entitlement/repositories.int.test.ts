// Reference tests 13-18: the entitlement upserts and the idempotency_keys queries, on a real database.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { upsertGrantIfNotActive, upsertRevokeIfNotRevoked } from "../../src/entitlement/entitlements/queries.ts";
import { findLiveIdempotencyRecord, storeIdempotencyRecord } from "../../src/entitlement/idempotency/queries.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { createTestDatabase, type TestDatabase } from "../support/infra.ts";

let db: TestDatabase;
let sql: Sql;
beforeAll(async () => {
  db = await createTestDatabase("ent_repo");
  sql = createSql({ url: db.url, schema: "entitlement", max: 4, applicationName: "test-repo" });
});
afterAll(async () => {
  await sql.end({ timeout: 5 });
  await db.drop();
});
beforeEach(async () => {
  await sql`truncate entitlements, idempotency_keys`;
});

const t0 = new Date("2026-01-17T00:00:00.123Z");
const t1 = new Date("2026-01-17T00:05:00.456Z");
const change = (now: Date) => ({ userId: "u1", sku: "sku1", reason: "purchase", purchaseId: "p1", now });
const rowOf = async () => {
  const [row] = await sql`select status, version::int as version, granted_at, revoked_at, updated_at from entitlements`;
  return row;
};

describe("entitlement upserts", () => {
  test("a second grant returns nothing and leaves version 0 and the first updated_at (test 13)", async () => {
    const first = await upsertGrantIfNotActive(sql, change(t0));
    expect(first).toEqual({ user_id: "u1", stock_keeping_unit: "sku1", status: "ACTIVE", version: 0, updated_at: t0 });
    expect(await upsertGrantIfNotActive(sql, change(t1)), "granting an ACTIVE row is refused").toBeUndefined();
    expect(await rowOf()).toMatchObject({ status: "ACTIVE", version: 0, updated_at: t0, granted_at: t0 });
  });

  test("revoking a pair never granted creates REVOKED v0; a second revoke changes nothing (test 14)", async () => {
    const first = await upsertRevokeIfNotRevoked(sql, change(t0));
    expect(first).toMatchObject({ status: "REVOKED", version: 0 });
    expect(await rowOf()).toMatchObject({ granted_at: null, revoked_at: t0 });
    expect(await upsertRevokeIfNotRevoked(sql, change(t1)), "revoking a REVOKED row is refused").toBeUndefined();
    expect(await rowOf()).toMatchObject({ status: "REVOKED", version: 0, updated_at: t0 });
  });

  test("with unlessKeyIsLive an upsert changes nothing while that caller's key has a live record", async () => {
    const guarded = (now: Date) => ({ ...change(now), unlessKeyIsLive: { caller: "c1", key: "k1" } });
    await storeIdempotencyRecord(sql, {
      caller: "c1",
      key: "k1",
      requestHash: "h",
      responseCode: 200,
      responseBody: {},
      expiresAt: new Date(Date.now() + 60_000),
    });
    expect(await upsertGrantIfNotActive(sql, guarded(t0)), "a live key: no grant").toBeUndefined();
    expect(await upsertRevokeIfNotRevoked(sql, guarded(t0)), "a live key: no revoke").toBeUndefined();
    expect(await rowOf(), "no row was written").toBeUndefined();
    await sql`update idempotency_keys set expires_at = now() - interval '1 second'`;
    expect(await upsertGrantIfNotActive(sql, guarded(t1)), "an expired key does not hold").toMatchObject({
      status: "ACTIVE",
      version: 0,
    });
    const other = { ...change(t1), sku: "sku2", unlessKeyIsLive: { caller: "c2", key: "k1" } };
    expect(await upsertGrantIfNotActive(sql, other), "another caller's key space").toMatchObject({ version: 0 });
  });

  test("revoke keeps granted_at; a grant after it clears revoked_at; each transition adds 1 to version", async () => {
    await upsertGrantIfNotActive(sql, change(t0));
    expect(await upsertRevokeIfNotRevoked(sql, change(t1))).toMatchObject({ status: "REVOKED", version: 1 });
    expect(await rowOf()).toMatchObject({ granted_at: t0, revoked_at: t1, updated_at: t1 });
    const t2 = new Date(t1.getTime() + 1000);
    expect(await upsertGrantIfNotActive(sql, change(t2))).toMatchObject({ status: "ACTIVE", version: 2 });
    expect(await rowOf()).toMatchObject({ granted_at: t2, revoked_at: null, updated_at: t2 });
  });
});

describe("idempotency_keys", () => {
  const key = { caller: "", key: "idem-1" };
  const record = (hash: string, expiresAt: Date) => ({
    ...key,
    requestHash: hash,
    responseCode: 200,
    responseBody: { user_id: "u", version: 0 },
    expiresAt,
  });
  const inOneDay = () => new Date(Date.now() + 86_400_000);

  test("a stored record reads back with its hash, code, body and expiry (test 15)", async () => {
    const expiresAt = inOneDay();
    expect(await storeIdempotencyRecord(sql, record("h1", expiresAt)), "stored into an empty slot").toBe(1);
    expect(await findLiveIdempotencyRecord(sql, key)).toEqual({
      requestHash: "h1",
      responseCode: 200,
      responseBody: { user_id: "u", version: 0 },
      expiresAt,
    });
  });

  test("storing over a live record writes nothing and keeps the original (tests 16, 17)", async () => {
    expect(await storeIdempotencyRecord(sql, record("h1", inOneDay()))).toBe(1);
    expect(await storeIdempotencyRecord(sql, record("h2", inOneDay())), "a live record is never overwritten").toBe(0);
    expect((await findLiveIdempotencyRecord(sql, key))?.requestHash).toBe("h1");
  });

  test("an expired record is invisible to the lookup and is replaced by the next store (test 18)", async () => {
    expect(await storeIdempotencyRecord(sql, record("h1", new Date(Date.now() - 1000)))).toBe(1);
    expect(await findLiveIdempotencyRecord(sql, key), "an expired record is not live").toBeUndefined();
    const fresh = { ...record("h2", inOneDay()), responseCode: 409, responseBody: { code: "X", message: "y" } };
    expect(await storeIdempotencyRecord(sql, fresh), "an expired record is overwritten").toBe(1);
    expect(await findLiveIdempotencyRecord(sql, key)).toMatchObject({ requestHash: "h2", responseCode: 409 });
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys`;
    expect(row?.n, "the overwrite replaces the row instead of adding one").toBe(1);
  });

  test("keys are scoped per caller", async () => {
    expect(await storeIdempotencyRecord(sql, record("h1", inOneDay()))).toBe(1);
    const other = { ...record("h2", inOneDay()), caller: "billing" };
    expect(await storeIdempotencyRecord(sql, other), "another caller's key is a different record").toBe(1);
    expect((await findLiveIdempotencyRecord(sql, { caller: "billing", key: "idem-1" }))?.requestHash).toBe("h2");
    expect((await findLiveIdempotencyRecord(sql, key))?.requestHash).toBe("h1");
  });
});
