// The relay's SQL on a real database (as in the Java original, except that the claim counts the attempt, and every
// finalize is guarded by locked_by and status).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  claimOutboxBatch,
  claimOutboxBatchAt,
  extendOutboxLease,
  failExhaustedOutboxClaims,
  markOutboxFailures,
  markOutboxPublished,
  markOutboxPublishedAndClaim,
} from "../../src/entitlement/work/outbox/queries.ts";
import { useTestDatabase } from "../support/infra.ts";
import { insertEvent, readEvent } from "./outbox.helpers.ts";

// Real PostgreSQL and NATS on a loaded 2-core CI machine: waits are polled, but the whole test may take a while.
setDefaultTimeout(90_000);

const f = useTestDatabase("outbox_sql", { service: "entitlement", poolMax: 4, resetEach: true });
const T = new Date("2026-01-17T00:00:00.000Z");
const at = (seconds: number) => new Date(T.getTime() + seconds * 1000);
const claim = (lockedBy: string, now = T, limit = 10, maxAttempts = 10, leases?: boolean) =>
  claimOutboxBatch(f.sql, { now, leaseUntil: new Date(now.getTime() + 30_000), lockedBy, limit, maxAttempts, leases });

/** An IN_FLIGHT row whose lease ran out (created at -30 s) and one whose lease an operator removed (at -40 s). */
async function insertLapsedClaims(): Promise<{ expired: string; leaseless: string }> {
  const expired = await insertEvent(f.sql, {
    createdAt: at(-30),
    status: "IN_FLIGHT",
    lockedBy: "a",
    leaseUntil: at(-1),
  });
  const leaseless = await insertEvent(f.sql, { createdAt: at(-40), status: "IN_FLIGHT", lockedBy: "b" });
  return { expired, leaseless };
}

describe("claimOutboxBatch", () => {
  test("takes due PENDING and lease-expired IN_FLIGHT rows, oldest first, and counts the attempt", async () => {
    const expired = await insertEvent(f.sql, {
      createdAt: at(-50),
      status: "IN_FLIGHT",
      lockedBy: "dead",
      leaseUntil: at(-1),
      attemptCount: 1,
    });
    const nullRetry = await insertEvent(f.sql, { createdAt: at(-40) });
    const pastRetry = await insertEvent(f.sql, { createdAt: at(-30), nextRetryAt: at(-1), attemptCount: 2 });
    await insertEvent(f.sql, { createdAt: at(-45), nextRetryAt: at(60) });
    await insertEvent(f.sql, { createdAt: at(-60), status: "IN_FLIGHT", lockedBy: "alive", leaseUntil: at(10) });
    await insertEvent(f.sql, { createdAt: at(-70), status: "PUBLISHED", publishedAt: at(-65) });
    await insertEvent(f.sql, { createdAt: at(-80), status: "FAILED", attemptCount: 10 });
    const newest = await insertEvent(f.sql, { createdAt: at(-10) });

    const rows = await claim("worker-2", T, 3);
    expect(
      rows.map((r) => r.eventId),
      "oldest claimable first; future retries and live leases skipped",
    ).toEqual([expired, nullRetry, pastRetry]);
    expect(
      rows.map((r) => r.attemptCount),
      "the claim itself is the attempt",
    ).toEqual([2, 1, 3]);
    for (const id of [expired, nullRetry, pastRetry]) {
      const row = await readEvent(f.sql, id);
      expect(row).toMatchObject({ status: "IN_FLIGHT", locked_by: "worker-2", locked_at: T, lease_until: at(30) });
    }
    expect((await readEvent(f.sql, newest)).status, "beyond the limit stays PENDING").toBe("PENDING");
  });

  test("another worker takes a row over once its lease expired", async () => {
    const id = await insertEvent(f.sql, { createdAt: at(-5) });
    expect(await claim("worker-1")).toHaveLength(1);
    expect(await claim("worker-2", at(29)), "the lease still holds").toHaveLength(0);
    const [row] = await claim("worker-2", at(30));
    expect(row?.eventId).toBe(id);
    expect(await readEvent(f.sql, id)).toMatchObject({
      locked_by: "worker-2",
      locked_at: at(30),
      lease_until: at(60),
      attempt_count: 2,
    });
  });

  test("an IN_FLIGHT row without a lease (set by hand) is claimed as an expired one is, in created_at order", async () => {
    const { expired, leaseless } = await insertLapsedClaims();
    const fresh = await insertEvent(f.sql, { createdAt: at(-20) });
    await insertEvent(f.sql, { createdAt: at(-50), status: "IN_FLIGHT", lockedBy: "alive", leaseUntil: at(10) });
    expect((await readEvent(f.sql, leaseless)).lease_until, "the row as an operator left it").toBeNull();
    const rows = await claim("worker-2");
    expect(rows.map((r) => r.eventId)).toEqual([leaseless, expired, fresh]);
    expect(await readEvent(f.sql, leaseless)).toMatchObject({ locked_by: "worker-2", lease_until: at(30) });
  });

  test("with leases off, a claim takes new and due rows only; the next with leases on takes the expired and leaseless", async () => {
    const { expired, leaseless } = await insertLapsedClaims();
    const retry = await insertEvent(f.sql, { createdAt: at(-25), nextRetryAt: at(-1), attemptCount: 1 });
    const fresh = await insertEvent(f.sql, { createdAt: at(-20) });
    const without = await claim("worker-2", T, 10, 10, false);
    expect(without.map((r) => r.eventId)).toEqual([retry, fresh]);
    expect((await readEvent(f.sql, expired)).locked_by, "left to the claim that looks for leases").toBe("a");
    const withLeases = await claim("worker-2", T, 10, 10, true);
    expect(withLeases.map((r) => r.eventId)).toEqual([leaseless, expired]);
  });

  test("a row whose every attempt was claimed and never finalized is not claimed again but FAILED", async () => {
    const id = await insertEvent(f.sql, { status: "IN_FLIGHT", lockedBy: "dead", leaseUntil: at(-1), attemptCount: 3 });
    expect(await claim("worker-2", T, 10, 3)).toHaveLength(0);
    expect(await failExhaustedOutboxClaims(f.sql, { now: T, maxAttempts: 3 })).toEqual([id]);
    const row = await readEvent(f.sql, id);
    expect(row).toMatchObject({ status: "FAILED", attempt_count: 3, locked_by: null, lease_until: null });
    expect(row.last_error).toContain("lease expired on attempt 3");
  });

  test("a chained claim looks for new events from its cursor on; retries and expired leases whatever their age", async () => {
    const older = await insertEvent(f.sql, { createdAt: at(1) });
    const retry = await insertEvent(f.sql, { createdAt: at(2), nextRetryAt: at(3) });
    const expired = await insertEvent(f.sql, {
      createdAt: at(3),
      status: "IN_FLIGHT",
      lockedBy: "dead",
      leaseUntil: at(4),
    });
    const tied = await insertEvent(f.sql, { createdAt: at(10) });
    const newer = await insertEvent(f.sql, { createdAt: at(11) });
    const args = { now: at(20), leaseUntil: at(50), lockedBy: "w", limit: 10, maxAttempts: 10, after: at(10) };
    const { claimed, position } = await claimOutboxBatchAt(f.sql, args);
    expect(
      claimed.map((r) => r.eventId),
      "a new event older than the cursor waits for a claim without one",
    ).toEqual([retry, expired, tied, newer]);
    expect(position, "the newest created_at claimed: where the next chained claim starts").toEqual(at(11));
    expect((await claimOutboxBatchAt(f.sql, { ...args, after: undefined })).claimed.map((r) => r.eventId)).toEqual([
      older,
    ]);
  });

  test("a claim takes no more than its limit", async () => {
    for (let i = 0; i < 23; i++) await insertEvent(f.sql, { createdAt: at(-100 + i) });
    expect(await claim("w", T, 10)).toHaveLength(10);
    const [row] = await f.sql<{ n: number }[]>`select count(*)::int as n from outbox_events where status = 'IN_FLIGHT'`;
    expect(row?.n).toBe(10);
  });

  test("concurrent claims never hand one row to two workers", async () => {
    for (let i = 0; i < 40; i++) await insertEvent(f.sql, { createdAt: at(-100 + i) });
    const results = await Promise.all(["a", "b", "c", "d"].map((w) => claim(w, T, 15)));
    const ids = results.flat().map((r) => r.eventId);
    expect(ids).toHaveLength(40);
    expect(new Set(ids).size, "each row claimed once").toBe(40);
  });
});

describe("finalize", () => {
  test("markOutboxPublished needs the lock and the IN_FLIGHT status", async () => {
    const id = await insertEvent(f.sql);
    await claim("owner");
    expect(
      await markOutboxPublished(f.sql, { lockedBy: "intruder", published: [{ eventId: id, publishedAt: T }] }),
    ).toEqual([]);
    expect((await readEvent(f.sql, id)).status).toBe("IN_FLIGHT");
    expect(
      await markOutboxPublished(f.sql, { lockedBy: "owner", published: [{ eventId: id, publishedAt: at(1) }] }),
    ).toEqual([id]);
    expect(await readEvent(f.sql, id)).toMatchObject({
      status: "PUBLISHED",
      published_at: at(1),
      locked_by: null,
      locked_at: null,
      lease_until: null,
      attempt_count: 1,
    });
    expect(
      await markOutboxPublished(f.sql, { lockedBy: "owner", published: [{ eventId: id, publishedAt: at(2) }] }),
      "not twice",
    ).toEqual([]);
  });

  test("the finalize that claims the next batch: guarded as markOutboxPublished, never re-claims what it finalizes", async () => {
    const mine = await insertEvent(f.sql, { createdAt: at(-30) });
    const theirs = await insertEvent(f.sql, { createdAt: at(-20) });
    await claimOutboxBatch(f.sql, { now: T, leaseUntil: at(5), lockedBy: "owner", limit: 1, maxAttempts: 10 });
    await claim("other");
    const next = await insertEvent(f.sql, { createdAt: at(-10) });
    const result = await markOutboxPublishedAndClaim(f.sql, {
      lockedBy: "owner",
      published: [
        { eventId: mine, publishedAt: at(1) },
        { eventId: theirs, publishedAt: at(1) },
      ],
      // Past the lease of the owner's row (at 5 s), within the other relay's (30 s).
      claim: { now: at(10), leaseUntil: at(40), lockedBy: "owner", limit: 10, maxAttempts: 10 },
    });
    expect(result.published, "only the row this relay holds is finalized").toEqual([mine]);
    expect(
      result.claimed.map((r) => r.eventId),
      "the next batch is claimed; the row finalized here is not taken again although its lease ran out",
    ).toEqual([next]);
    expect(await readEvent(f.sql, mine)).toMatchObject({ status: "PUBLISHED", published_at: at(1), locked_by: null });
    expect(await readEvent(f.sql, theirs)).toMatchObject({ status: "IN_FLIGHT", locked_by: "other" });
    expect(await readEvent(f.sql, next)).toMatchObject({ status: "IN_FLIGHT", locked_by: "owner", attempt_count: 1 });
  });

  test("markOutboxFailures needs the lock, stores PENDING and clears next_retry_at on FAILED", async () => {
    const retry = await insertEvent(f.sql, { createdAt: at(-2) });
    const fail = await insertEvent(f.sql, { createdAt: at(-1), nextRetryAt: at(-1) });
    await claim("owner");
    const failures = [
      { eventId: retry, status: "PENDING" as const, attemptCount: 1, nextRetryAt: at(5), lastError: "boom" },
      { eventId: fail, status: "FAILED" as const, attemptCount: 10, nextRetryAt: null, lastError: "bad" },
    ];
    expect(await markOutboxFailures(f.sql, { lockedBy: "intruder", failures })).toEqual([]);
    expect((await markOutboxFailures(f.sql, { lockedBy: "owner", failures })).sort()).toEqual([retry, fail].sort());
    expect(await readEvent(f.sql, retry)).toMatchObject({
      status: "PENDING",
      attempt_count: 1,
      next_retry_at: at(5),
      last_error: "boom",
      locked_by: null,
      lease_until: null,
    });
    expect(await readEvent(f.sql, fail)).toMatchObject({
      status: "FAILED",
      attempt_count: 10,
      next_retry_at: null,
      last_error: "bad",
      locked_by: null,
      locked_at: null,
    });
  });

  test("extendOutboxLease moves only the leases this worker still holds", async () => {
    const mine = await insertEvent(f.sql, { createdAt: at(-2) });
    const theirs = await insertEvent(f.sql, { createdAt: at(-1) });
    await claim("owner");
    await f.sql`update outbox_events set locked_by = 'other' where event_id = ${theirs}`;
    expect(await extendOutboxLease(f.sql, { eventIds: [mine, theirs], lockedBy: "owner", leaseUntil: at(90) })).toBe(1);
    expect((await readEvent(f.sql, mine)).lease_until).toEqual(at(90));
    expect((await readEvent(f.sql, theirs)).lease_until).toEqual(at(30));
  });
});
