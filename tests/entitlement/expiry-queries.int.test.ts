// The SQL of the expiry kind of due work (src/entitlement/work/expiry/queries.ts) against a real PostgreSQL: never claimed
// early, claims of two workers disjoint, executed once, a lost lease changes nothing, a stale expiry revokes nothing.
import { describe, expect, test } from "bun:test";
import { claimDueExpiries, executeExpiry, expiryReads, failExpiry } from "../../src/entitlement/work/expiry/queries.ts";
import { send, useApi, vectorBody } from "./api.helpers.ts";

const f = useApi("ent_expiry_sql", { resetEach: true });

const SECOND = 1_000;
const grant = (user: string, expiresAt: Date, key = `g-${user}`) =>
  send(
    f.app,
    new Request("http://localhost/v1/entitlements/grants", {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ ...vectorBody, user_id: user, expires_at: expiresAt.toISOString() }),
    }),
  );
const claim = (lockedBy: string, now: Date, leaseMs = 30 * SECOND, limit = 100) =>
  claimDueExpiries(f.sql, { now, leaseUntil: new Date(now.getTime() + leaseMs), lockedBy, limit, maxAttempts: 3 });
const execute = (user: string, lockedBy: string, now: Date) =>
  f.sql.begin((tx) =>
    executeExpiry(tx, {
      userId: user,
      sku: "sku-1",
      lockedBy,
      now,
      traceId: "trace-x",
    }),
  );

describe("expiry SQL", () => {
  test("nothing is claimed before expires_at; the next due time is the expiry", async () => {
    const at = new Date(Date.now() + 60 * SECOND);
    await grant("u1", at);
    expect(await claim("w1", new Date(at.getTime() - 1))).toEqual([]);
    expect(await expiryReads.nextDueAt(f.sql)).toEqual(at);
    expect((await claim("w1", at)).map((c) => [c.userId, c.attemptCount])).toEqual([["u1", 1]]);
  });

  test("two workers claim disjoint sets; each expiry revokes once, with its audit row and event", async () => {
    const at = new Date(Date.now() + 60 * SECOND);
    for (let i = 0; i < 20; i++) await grant(`u${i}`, at);
    const later = new Date(at.getTime() + SECOND);
    const [a, b] = await Promise.all([claim("w1", later, 30 * SECOND, 12), claim("w2", later, 30 * SECOND, 12)]);
    const users = [...(a ?? []), ...(b ?? [])].map((c) => c.userId);
    expect(users.length, "every due expiry claimed by one of the two").toBe(20);
    expect(new Set(users).size, "no expiry claimed twice").toBe(20);
    for (const c of a ?? []) expect(await execute(c.userId, "w1", later)).toEqual({ finalized: 1, revoked: 1 });
    for (const c of b ?? []) expect(await execute(c.userId, "w2", later)).toEqual({ finalized: 1, revoked: 1 });
    expect(await execute("u0", "w1", later), "a second execution finds the row DONE").toEqual({
      finalized: 0,
      revoked: 0,
    });
    const [counts] = await f.sql`
      select (select count(*)::int from entitlements where status = 'REVOKED' and version = 1 and source = 'expiry'
                and expires_at is null) as revoked,
             (select count(*)::int from entitlement_audit where action = 'EXPIRE') as audits,
             (select count(*)::int from outbox_events where payload->>'source' = 'expiry') as events`;
    expect(counts).toEqual({ revoked: 20, audits: 20, events: 20 });
    const [event] = await f.sql`select payload from outbox_events where payload->>'source' = 'expiry' limit 1`;
    expect(event?.payload).toMatchObject({
      event_type: "EntitlementRevoked",
      source_id: "purchase-1",
      version: 1,
      trace_id: "trace-x",
    });
  });

  test("a claim whose lease ran out is taken over; the first worker's execution then changes nothing", async () => {
    const at = new Date(Date.now() + 60 * SECOND);
    await grant("u1", at);
    await claim("w1", at, SECOND);
    const takeover = new Date(at.getTime() + 2 * SECOND);
    expect((await claim("w2", takeover)).map((c) => c.attemptCount)).toEqual([2]);
    expect(await execute("u1", "w1", takeover), "the lease was lost").toEqual({ finalized: 0, revoked: 0 });
    expect(await execute("u1", "w2", takeover)).toEqual({ finalized: 1, revoked: 1 });
  });

  test("an expiry made stale by a revoke or an extension finishes without revoking", async () => {
    const at = new Date(Date.now() + 60 * SECOND);
    await grant("u1", at);
    await send(
      f.app,
      new Request("http://localhost/v1/entitlements/revokes", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "r-u1" },
        body: JSON.stringify({ ...vectorBody, user_id: "u1" }),
      }),
    );
    await claim("w1", at);
    expect(await execute("u1", "w1", at)).toEqual({ finalized: 1, revoked: 0 });
    const [row] = await f.sql`select status, version::int from entitlements where user_id = 'u1'`;
    expect(row).toEqual({ status: "REVOKED", version: 1 });
  });

  test("a failure goes back to PENDING at the retry time, or FAILED without one; exhausted claims end FAILED", async () => {
    const at = new Date(Date.now() + 60 * SECOND);
    await grant("u1", at);
    await claim("w1", at);
    const retryAt = new Date(at.getTime() + 5 * SECOND);
    const failure = { userId: "u1", sku: "sku-1", lockedBy: "w1", now: at, lastError: "boom" };
    expect(await failExpiry(f.sql, { ...failure, retryAt })).toBe(true);
    expect(await failExpiry(f.sql, { ...failure, retryAt }), "guarded: no longer this worker's claim").toBe(false);
    expect(await claim("w1", new Date(retryAt.getTime() - 1))).toEqual([]);
    await claim("w1", retryAt, SECOND); // attempt 2, lease lost
    await claim("w2", new Date(retryAt.getTime() + 2 * SECOND), SECOND); // attempt 3, lease lost
    const exhausted = await claim("w3", new Date(retryAt.getTime() + 4 * SECOND));
    expect(exhausted.map((c) => c.status)).toEqual(["FAILED"]);
    const [row] = await f.sql`select status, last_error from entitlement_expiries`;
    expect(row?.status).toBe("FAILED");
    expect(row?.last_error).toContain("lease expired on attempt 3");
  });
});
