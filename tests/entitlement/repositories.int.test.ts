// On a real database: the entitlement transitions of `entitlement_status_change` (a grant, a revoke) with the facts it
// remembers, and the idempotency records of `idempotency_stored` / `idempotency_remember`, the one write path every
// command runs; and a bundle grant costs one statement, and a single grant's facts read no row again.
import { describe, expect, test } from "bun:test";
import postgres from "postgres";
import { executeBundle } from "../../src/entitlement/features/bundles/service.ts";
import type { Action } from "../../src/entitlement/features/entitlements/model.ts";
import type { ChangeFacts } from "../../src/entitlement/features/entitlements/replies.ts";
import { cancelPointReservation } from "../../src/entitlement/write/cancel-point-reservation.ts";
import { grantEntitlements } from "../../src/entitlement/write/grant-entitlements.ts";
import type { CommandOutcome, IdempotencyArgs } from "../../src/entitlement/write/idempotency-params.ts";
import { reservePoints } from "../../src/entitlement/write/reserve-points.ts";
import { revokeEntitlement } from "../../src/entitlement/write/revoke-entitlement.ts";
import type { Db } from "../../src/shared/db.ts";
import { useTestDatabase } from "../support/infra.ts";

const f = useTestDatabase("ent_repo", { service: "entitlement", poolMax: 4, resetEach: true });

const t0 = new Date("2026-01-17T00:00:00.123Z");
const t1 = new Date("2026-01-17T00:05:00.456Z");
let keys = 0;
const idem = (overrides: Partial<IdempotencyArgs> = {}): IdempotencyArgs => ({
  caller: "",
  key: `k-${++keys}`,
  lockKey: BigInt(keys),
  requestHash: "h",
  recordExpiresAt: new Date(Date.now() + 60_000),
  lockTimeoutMs: 5_000,
  ...overrides,
});
const change = (action: Action, now: Date, idempotency = idem()) => {
  const fields = {
    userId: "u1",
    reason: "purchase",
    purchaseId: "p1",
    now,
    traceId: "t",
    traceparent: null,
    payload: {},
    detail: {},
    idempotency,
  };
  return action === "GRANT"
    ? grantEntitlements(f.sql, { ...fields, skus: ["sku1"], bundle: false, expiresAt: null })
    : revokeEntitlement(f.sql, { ...fields, sku: "sku1" });
};
const rowOf = async () => {
  const [row] =
    await f.sql`select status, version::int as version, granted_at, revoked_at, updated_at from entitlements`;
  return row;
};

/**
 * The PL/pgSQL functions a command's call ran, each with its calls and whether it returns a set, from the backend's
 * statistics not yet reported (track_functions set for the transaction alone), before and after the call: they may
 * hold an earlier transaction of the connection's, so the difference is this call's. A function that returns a set
 * costs its caller a query, an executor and a tuplestore; one that returns a value is an expression.
 */
const functionsRun = (call: (tx: Db) => Promise<CommandOutcome>, expected: string) =>
  f.sql.begin(async (tx) => {
    await tx`set local track_functions = 'pl'`;
    const calls = async () => {
      const rows = await tx<{ name: string; calls: number; set: boolean }[]>`
        select s.funcname as name, s.calls::int as calls, p.proretset as set
        from pg_stat_xact_user_functions s join pg_proc p on p.oid = s.funcid`;
      return new Map(rows.map((r) => [r.name, r]));
    };
    const before = await calls();
    expect((await call(tx)).outcome).toBe(expected);
    return [...(await calls()).values()]
      .map((r) => ({ name: r.name, calls: r.calls - (before.get(r.name)?.calls ?? 0), set: r.set }))
      .filter((r) => r.calls > 0)
      .sort((a, b) => a.name.localeCompare(b.name));
  });

describe("entitlement_grant and entitlement_revoke", () => {
  test("a second grant is refused and leaves version 0 and the first updated_at", async () => {
    const first = await change("GRANT", t0);
    expect(first).toMatchObject({ outcome: "applied", replyCode: 200, replyFacts: { kind: "changed" } });
    const { items } = first.replyFacts as Extract<ChangeFacts, { kind: "changed" }>;
    expect(items).toEqual([{ stock_keeping_unit: "sku1", version: 0, updated_at: expect.any(String), changed: true }]);
    expect(new Date(items[0]?.updated_at as string), "the facts' updated_at is the grant's instant").toEqual(t0);
    expect(await change("GRANT", t1), "granting an ACTIVE row is refused").toMatchObject({
      outcome: "state_conflict",
      replyCode: 409,
      replyFacts: { kind: "unchanged" },
    });
    expect(await rowOf()).toMatchObject({ status: "ACTIVE", version: 0, updated_at: t0, granted_at: t0 });
  });

  test("revoking a pair never granted creates REVOKED v0; a second revoke changes nothing", async () => {
    expect(await change("REVOKE", t0)).toMatchObject({ outcome: "applied", replyFacts: { items: [{ version: 0 }] } });
    expect(await rowOf()).toMatchObject({ status: "REVOKED", granted_at: null, revoked_at: t0 });
    expect((await change("REVOKE", t1)).outcome, "revoking a REVOKED row is refused").toBe("state_conflict");
    expect(await rowOf()).toMatchObject({ status: "REVOKED", version: 0, updated_at: t0 });
  });

  test("while the caller's key has a live record nothing changes and the record is returned", async () => {
    const key = idem({ caller: "c1", requestHash: "first" });
    await change("GRANT", t0, key);
    const again = await change("REVOKE", t1, { ...key, requestHash: "second" });
    expect(again, "a live key: the stored reply, nothing done").toMatchObject({
      outcome: "stored",
      storedHash: "first",
      replyCode: 200,
    });
    expect(await rowOf(), "the revoke did not run").toMatchObject({ status: "ACTIVE", version: 0 });
    await f.sql`update idempotency_keys set expires_at = now() - interval '1 second'`;
    expect((await change("REVOKE", t1, key)).outcome, "an expired key does not hold").toBe("applied");
    const other = await change("GRANT", t1, { ...key, caller: "c2" });
    expect(other.outcome, "another caller's key space").toBe("applied");
  });

  test("revoke keeps granted_at; a grant after it clears revoked_at; each transition adds 1 to version", async () => {
    await change("GRANT", t0);
    expect(await change("REVOKE", t1)).toMatchObject({ replyFacts: { items: [{ version: 1 }] } });
    expect(await rowOf()).toMatchObject({ granted_at: t0, revoked_at: t1, updated_at: t1 });
    const t2 = new Date(t1.getTime() + 1000);
    expect(await change("GRANT", t2)).toMatchObject({ replyFacts: { items: [{ version: 2 }] } });
    expect(await rowOf()).toMatchObject({ granted_at: t2, revoked_at: null, updated_at: t2 });
    const [counts] = await f.sql<{ audit: number; events: number }[]>`
      select (select count(*) from entitlement_audit)::int as audit, (select count(*) from outbox_events)::int as events`;
    expect(counts, "each applied change writes one audit row and one event").toEqual({ audit: 3, events: 3 });
  });
});

describe("idempotency_keys", () => {
  const key = { caller: "", key: "idem-1" };
  const store = (
    hash: string,
    expiresAt: Date,
    code = 200,
    body: Record<string, string | number> = { user_id: "u", version: 0 },
  ) => f.sql`select idempotency_store(${key.caller}, ${key.key}, ${hash}, ${code}, ${f.sql.json(body)}, ${expiresAt})`;
  const open = async (caller = key.caller) => {
    const [row] = await f.sql`
      select request_hash, response_code, response_body, expires_at
      from idempotency_open(${caller}, ${key.key}, 1, 1000)`;
    return row;
  };
  const inOneDay = () => new Date(Date.now() + 86_400_000);

  test("a stored record reads back with its hash, code, body and expiry", async () => {
    const expiresAt = inOneDay();
    await store("h1", expiresAt);
    expect(await open()).toEqual({
      request_hash: "h1",
      response_code: 200,
      response_body: { user_id: "u", version: 0 },
      expires_at: expiresAt,
    });
  });

  test("storing over a live record fails and keeps the original", async () => {
    await store("h1", inOneDay());
    await expect(store("h2", inOneDay()), "a live record is never overwritten").rejects.toThrow(
      "idempotency invariant violated",
    );
    expect((await open())?.request_hash).toBe("h1");
  });

  test("an expired record is invisible to the lookup and is replaced by the next store", async () => {
    await store("h1", new Date(Date.now() - 1000));
    expect(await open(), "an expired record is not live").toBeUndefined();
    await store("h2", inOneDay(), 409, { code: "X", message: "y" });
    expect(await open()).toMatchObject({ request_hash: "h2", response_code: 409 });
    const [row] = await f.sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys`;
    expect(row?.n, "the overwrite replaces the row instead of adding one").toBe(1);
  });

  test("keys are scoped per caller", async () => {
    await store("h1", inOneDay());
    await f.sql`select idempotency_store('billing', ${key.key}, 'h2', 200, '{}', ${inOneDay()})`;
    expect((await open("billing"))?.request_hash, "another caller's key is a different record").toBe("h2");
    expect((await open())?.request_hash).toBe("h1");
  });
});

/** A grant of sku1 to `userId` under a key of its own. */
const grantOfOne = (userId: string) => ({
  userId,
  reason: "purchase",
  purchaseId: "p",
  now: t0,
  traceId: "t",
  traceparent: null,
  payload: {},
  detail: {},
  idempotency: idem(),
  skus: ["sku1"],
  bundle: false,
  expiresAt: null,
});

describe("round trips", () => {
  test("the facts of a grant that changed its one item are what the upsert returned: the row is not read again", async () => {
    // The backend's scans of entitlements before and after the call, in one transaction (the count not yet reported
    // may hold earlier statements of the connection, so the difference is this call's): the upsert's conflict check
    // reads the primary key once; reading the row again for the facts would make it two.
    const [before, after, grant] = await f.sql.begin(async (tx) => {
      const scans = async () => {
        const [row] = await tx<{ idx: number; seq: number }[]>`
          select coalesce(idx_scan, 0)::int as idx, coalesce(seq_scan, 0)::int as seq
          from pg_stat_xact_user_tables where relname = 'entitlements'`;
        return row;
      };
      const first = await scans();
      const applied = await grantEntitlements(tx, grantOfOne("u-facts"));
      return [first, await scans(), applied] as const;
    });
    expect(grant.replyFacts).toEqual({
      kind: "changed",
      items: [{ stock_keeping_unit: "sku1", version: 0, updated_at: expect.any(String), changed: true }],
    });
    expect(
      { idx: (after?.idx ?? 0) - (before?.idx ?? 0), seq: (after?.seq ?? 0) - (before?.seq ?? 0) },
      "one index scan of entitlements, the upsert's",
    ).toEqual({ idx: 1, seq: 0 });
  });

  test("a grant runs each of its steps once, and only the function it calls returns a set: no layer returns rows", async () => {
    const grant = grantOfOne("u-layers");
    expect(await functionsRun((tx) => grantEntitlements(tx, grant), "applied")).toEqual([
      { name: "entitlement_facts", calls: 1, set: false },
      { name: "entitlement_record", calls: 1, set: false },
      { name: "entitlement_status_change", calls: 1, set: true },
      { name: "idempotency_keep", calls: 1, set: false },
      { name: "idempotency_remember", calls: 1, set: false },
      { name: "idempotency_stored", calls: 1, set: false },
    ]);
    expect(await functionsRun((tx) => grantEntitlements(tx, grant), "stored"), "a replay").toEqual([
      { name: "entitlement_status_change", calls: 1, set: true },
      { name: "idempotency_stored", calls: 1, set: false },
    ]);
  });

  test("a reservation and its cancel share the opening and the closing as values: only their own function returns a set", async () => {
    const reservationId = crypto.randomUUID();
    const point = (key: string) => ({ reservationId, now: t0, traceId: "t", idempotency: idem({ key }) });
    const reservation = { ...point("reserve"), userId: "u-points", pointAmount: 5, executeAt: t1, reason: null };
    const applied = [
      { name: "idempotency_keep", calls: 1, set: false },
      { name: "idempotency_remember", calls: 1, set: false },
      { name: "idempotency_stored", calls: 1, set: false },
      { name: "point_recorded", calls: 1, set: false },
    ];
    expect(await functionsRun((tx) => reservePoints(tx, reservation), "applied")).toEqual(
      [...applied, { name: "reserve_points", calls: 1, set: true }].sort((a, b) => a.name.localeCompare(b.name)),
    );
    expect(await functionsRun((tx) => cancelPointReservation(tx, point("cancel")), "applied")).toEqual([
      { name: "cancel_point_reservation", calls: 1, set: true },
      ...applied,
    ]);
  });

  test("a bundle grant of ten items is one statement: no begin, no commit, nothing pipelined", async () => {
    const sent: string[] = [];
    const counted = postgres(f.db.url, {
      max: 1,
      prepare: true,
      connection: { search_path: "entitlement" },
      debug: (_connection, query) => sent.push(query),
    });
    try {
      await counted`select 1`;
      const deps = {
        sql: counted,
        now: () => new Date(),
        idempotencyTtlMs: 60_000,
        statementTimeoutMs: 5_000,
        metrics: { record: () => {} },
      };
      const body = {
        user_id: "u-bundle",
        stock_keeping_units: Array.from({ length: 10 }, (_, i) => `sku-${i}`),
        reason: "purchase",
        purchase_id: "p",
      };
      sent.length = 0;
      const reply = await executeBundle(deps, { body, idempotencyKey: "bundle-1", traceId: "t", caller: "" });
      expect(reply.status).toBe(200);
      expect(sent, "one statement, the call of entitlement_status_change").toHaveLength(1);
      expect(sent[0]).toContain("entitlement_status_change(");
      const [row] = await f.sql<{ n: number }[]>`select count(*)::int as n from outbox_events`;
      expect(row?.n, "ten events committed by that one statement").toBe(10);
    } finally {
      await counted.end({ timeout: 5 });
    }
  });
});
