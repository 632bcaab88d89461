import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { claimNotifications, countBacklog, markRetry, markSent } from "../../src/notification/work/delivery/queries.ts";
import { createSentRecorder } from "../../src/notification/work/delivery/sent.ts";
import type { Db } from "../../src/shared/db.ts";
import { useTestDatabase } from "../support/infra.ts";
import { notificationRow, seedNotification } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_claim", { service: "notification", resetEach: true });

// An hour ahead of the wall clock, so rows seeded "now" are due.
const T0 = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
const at = (ms: number) => new Date(T0.getTime() + ms);

describe("claim", () => {
  test("moves due PENDING rows to PROCESSING with the lock and counts the attempt", async () => {
    const id = await seedNotification(f.sql, { createdAt: at(-1000), nextRetryAt: T0 });
    const claimed = await claimNotifications(f.sql, { limit: 10, now: T0, leaseUntil: at(30_000), lockedBy: "w1" });
    expect(claimed.map((c) => c.notificationId)).toEqual([id]);
    expect(claimed[0]?.attemptCount).toBe(1);
    const row = await notificationRow(f.sql, id);
    expect(row).toMatchObject({ status: "PROCESSING", locked_by: "w1", attempt_count: 1 });
    expect(row.lease_until?.getTime()).toBe(at(30_000).getTime());
    expect(row.locked_at?.getTime()).toBe(T0.getTime());
  });

  test("takes expired leases and due retries in created_at order, skips future retries and live leases", async () => {
    const expired = await seedNotification(f.sql, {
      createdAt: at(-5000),
      status: "PROCESSING",
      lockedBy: "dead",
      leaseUntil: at(-1),
    });
    const nullRetry = await seedNotification(f.sql, { createdAt: at(-4000), nextRetryAt: null });
    const dueRetry = await seedNotification(f.sql, { createdAt: at(-3000), nextRetryAt: at(-10) });
    await seedNotification(f.sql, { createdAt: at(-6000), nextRetryAt: at(1000) });
    await seedNotification(f.sql, { createdAt: at(-7000), status: "PROCESSING", lockedBy: "alive", leaseUntil: at(1) });
    await seedNotification(f.sql, { createdAt: at(-8000), status: "SENT", nextRetryAt: null });
    const claimed = await claimNotifications(f.sql, { limit: 3, now: T0, leaseUntil: at(30_000), lockedBy: "w2" });
    expect(claimed.map((c) => c.notificationId)).toEqual([expired, nullRetry, dueRetry]);
    expect((await notificationRow(f.sql, expired)).locked_by).toBe("w2");
  });

  test("with more due retries than the limit, takes the longest overdue first and never one not yet due", async () => {
    for (let i = 0; i < 5; i++) await seedNotification(f.sql, { createdAt: at(-9000 + i), nextRetryAt: at(1000) });
    const lateA = await seedNotification(f.sql, { createdAt: at(-3000), nextRetryAt: at(-10) });
    const lateB = await seedNotification(f.sql, { createdAt: at(-2000), nextRetryAt: at(-500) });
    const lateC = await seedNotification(f.sql, { createdAt: at(-1000), nextRetryAt: at(-20) });
    const claim = () => claimNotifications(f.sql, { limit: 2, now: T0, leaseUntil: at(30_000), lockedBy: "w3" });
    const ids = async () => (await claim()).map((c) => c.notificationId);
    expect(await ids(), "the two longest overdue, returned in created_at order").toEqual([lateB, lateC]);
    expect(await ids(), "then the last due one").toEqual([lateA]);
    expect(await ids(), "the older retries that are not due yet are never claimed").toEqual([]);
  });

  test("two concurrent claims never take the same row", async () => {
    for (let i = 0; i < 40; i++) await seedNotification(f.sql, { createdAt: at(-i) });
    const [a, b] = await Promise.all([
      claimNotifications(f.sql, { limit: 25, now: T0, leaseUntil: at(30_000), lockedBy: "a" }),
      claimNotifications(f.sql, { limit: 25, now: T0, leaseUntil: at(30_000), lockedBy: "b" }),
    ]);
    const ids = [...(a ?? []), ...(b ?? [])].map((c) => c.notificationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(40);
  });

  test("the backlog counts exactly what a claim could take", async () => {
    await seedNotification(f.sql, { nextRetryAt: at(-1) });
    await seedNotification(f.sql, { status: "PROCESSING", lockedBy: "x", leaseUntil: at(-1) });
    await seedNotification(f.sql, { nextRetryAt: at(1) });
    await seedNotification(f.sql, { status: "SENT", nextRetryAt: null });
    expect(await countBacklog(f.sql, T0)).toBe(2);
  });
});

describe("finalize guards", () => {
  test("markSent clears lock and retry fields, keeps attempt_count, and needs the lock", async () => {
    const id = await seedNotification(f.sql, {
      status: "PROCESSING",
      lockedBy: "me",
      leaseUntil: at(1),
      attemptCount: 1,
    });
    expect(await markSent(f.sql, { notificationId: id, lockedBy: "other", sentAt: at(5) })).toBe(0);
    expect((await notificationRow(f.sql, id)).status).toBe("PROCESSING");
    expect(await markSent(f.sql, { notificationId: id, lockedBy: "me", sentAt: at(5) })).toBe(1);
    const row = await notificationRow(f.sql, id);
    expect(row).toMatchObject({ status: "SENT", attempt_count: 1, locked_by: null, locked_at: null });
    expect(row.lease_until).toBeNull();
    expect(row.next_retry_at).toBeNull();
    expect(row.sent_at?.getTime()).toBe(at(5).getTime());
    expect(await markSent(f.sql, { notificationId: id, lockedBy: "me", sentAt: at(6) })).toBe(0);
  });

  test("the worker's grouped SENT: concurrent marks share one statement, each with its own time and guard", async () => {
    const held = { status: "PROCESSING" as const, lockedBy: "me", leaseUntil: at(1), attemptCount: 1 };
    const mine = [await seedNotification(f.sql, held), await seedNotification(f.sql, held)];
    const theirs = await seedNotification(f.sql, { ...held, lockedBy: "other" });
    let statements = 0;
    const counting = ((...args: Parameters<typeof f.sql>) => {
      statements++;
      return f.sql(...args);
    }) as unknown as Db;
    const record = createSentRecorder({ sql: counting, lockedBy: "me" });
    const results = await Promise.all([
      record(mine[0] as string, at(5)),
      record(mine[1] as string, at(6)),
      record(theirs, at(7)),
    ]);
    expect(results, "each caller learns whether its own row was marked; another worker's row is left alone").toEqual([
      true,
      true,
      false,
    ]);
    expect(statements, "marks made in one turn of the event loop go out as one statement").toBe(1);
    expect(await notificationRow(f.sql, mine[0] as string)).toMatchObject({ status: "SENT", locked_by: null });
    expect((await notificationRow(f.sql, mine[1] as string)).sent_at?.getTime()).toBe(at(6).getTime());
    expect(await notificationRow(f.sql, theirs)).toMatchObject({ status: "PROCESSING", locked_by: "other" });
    expect(await record(mine[0] as string, at(8)), "a row already SENT is not marked again").toBe(false);
  });

  test("markRetry reschedules and unlocks, and needs the lock", async () => {
    const id = await seedNotification(f.sql, {
      status: "PROCESSING",
      lockedBy: "me",
      leaseUntil: at(1),
      attemptCount: 2,
    });
    expect(await markRetry(f.sql, { notificationId: id, lockedBy: "other", nextRetryAt: at(9), error: "x" })).toBe(0);
    expect(await markRetry(f.sql, { notificationId: id, lockedBy: "me", nextRetryAt: at(9), error: "boom" })).toBe(1);
    const row = await notificationRow(f.sql, id);
    expect(row).toMatchObject({ status: "PENDING", attempt_count: 2, locked_by: null, last_error: "boom" });
    expect(row.next_retry_at?.getTime()).toBe(at(9).getTime());
  });
});
