import { describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  countStaleActive,
  deleteFinishedNotifications,
  deleteProcessedEvents,
} from "../../src/notification/work/retention/queries.ts";
import { runRetention } from "../../src/notification/work/retention/service.ts";
import { createLogger, silentLogger } from "../../src/shared/logger.ts";
import { useTestDatabase } from "../support/infra.ts";
import { seedNotification } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_retention", { service: "notification", resetEach: true });

const NOW = new Date("2026-02-16T00:00:00Z");
const THRESHOLD = new Date(NOW.getTime() - 30 * 86_400_000);
const before = (ms: number) => new Date(THRESHOLD.getTime() - ms);
const after = (ms: number) => new Date(THRESHOLD.getTime() + ms);

async function seedProcessed(processedAt: Date): Promise<string> {
  const id = crypto.randomUUID();
  await f.sql`insert into processed_events (event_id, processed_at) values (${id}, ${processedAt})`;
  return id;
}
const statuses = async () =>
  (await f.sql<{ status: string }[]>`select status from notifications order by status`).map((r) => r.status);
const processedIds = async () =>
  (await f.sql<{ event_id: string }[]>`select event_id from processed_events`).map((r) => r.event_id).sort();

/** A retention outcome: every count 0 but those given. */
const removed = (counts: Partial<Awaited<ReturnType<typeof runRetention>>>) => ({
  staleActive: 0,
  notificationsDeleted: 0,
  processedEventsDeleted: 0,
  deliveriesDeleted: 0,
  attemptsDeleted: 0,
  pushesDeleted: 0,
  requestsDeleted: 0,
  ...counts,
});

describe("retention queries", () => {
  test("stale active counts only PENDING/PROCESSING strictly older than the threshold", async () => {
    await seedNotification(f.sql, { createdAt: before(1), status: "PENDING" });
    await seedNotification(f.sql, { createdAt: before(1), status: "PROCESSING" });
    await seedNotification(f.sql, { createdAt: THRESHOLD, status: "PENDING" });
    await seedNotification(f.sql, { createdAt: after(1), status: "PROCESSING" });
    await seedNotification(f.sql, { createdAt: before(1), status: "SENT" });
    await seedNotification(f.sql, { createdAt: before(1), status: "FAILED" });
    expect(await countStaleActive(f.sql, THRESHOLD)).toBe(2);
  });

  test("deletes only SENT/FAILED strictly older than the threshold, in bounded batches", async () => {
    for (let i = 0; i < 5; i++) await seedNotification(f.sql, { createdAt: before(1000 + i), status: "SENT" });
    await seedNotification(f.sql, { createdAt: THRESHOLD, status: "SENT" });
    await seedNotification(f.sql, { createdAt: after(1), status: "FAILED" });
    await seedNotification(f.sql, { createdAt: before(1), status: "PENDING" });
    await seedNotification(f.sql, { createdAt: before(1), status: "PROCESSING" });
    expect(await deleteFinishedNotifications(f.sql, { threshold: THRESHOLD, limit: 2 })).toBe(2);
    expect(await deleteFinishedNotifications(f.sql, { threshold: THRESHOLD, limit: 10 })).toBe(3);
    expect(await statuses()).toEqual(["FAILED", "PENDING", "PROCESSING", "SENT"]);
  });

  test("processed events: only processed_at strictly older than the threshold goes", async () => {
    await seedProcessed(before(1));
    const boundary = await seedProcessed(THRESHOLD);
    const newer = await seedProcessed(after(1));
    expect(await deleteProcessedEvents(f.sql, { threshold: THRESHOLD, limit: 100 })).toBe(1);
    expect(await processedIds()).toEqual([boundary, newer].sort());
  });
});

describe("runRetention", () => {
  test("removes only old SENT and FAILED, keeps stale active rows and logs them at error", async () => {
    await seedProcessed(before(86_400_000));
    const recent = await seedProcessed(after(86_400_000));
    await seedNotification(f.sql, { createdAt: before(86_400_000), status: "SENT" });
    await seedNotification(f.sql, { createdAt: before(86_400_000), status: "FAILED" });
    await seedNotification(f.sql, { createdAt: before(86_400_000), status: "PENDING" });
    await seedNotification(f.sql, { createdAt: before(86_400_000), status: "PROCESSING" });
    await seedNotification(f.sql, { createdAt: after(86_400_000), status: "SENT" });
    const lines: string[] = [];
    const log = createLogger({ level: "info", service: "t", destination: { write: (l: string) => lines.push(l) } });
    const outcome = await runRetention({ sql: f.sql, log, now: NOW, retentionDays: 30, batchSize: 1 });
    expect(outcome).toEqual(removed({ staleActive: 2, notificationsDeleted: 2, processedEventsDeleted: 1 }));
    expect(await statuses()).toEqual(["PENDING", "PROCESSING", "SENT"]);
    expect(await processedIds()).toEqual([recent]);
    const stale = lines.map((l) => JSON.parse(l)).find((l) => l.msg.startsWith("stale active records"));
    expect(stale?.level).toBe("error");
  });

  test("keeps rows exactly at the threshold", async () => {
    const boundary = await seedProcessed(THRESHOLD);
    await seedProcessed(before(1));
    await seedNotification(f.sql, { createdAt: THRESHOLD, status: "SENT" });
    await seedNotification(f.sql, { createdAt: THRESHOLD, status: "FAILED" });
    await seedNotification(f.sql, { createdAt: before(1), status: "SENT" });
    await seedNotification(f.sql, { createdAt: before(1), status: "FAILED" });
    const outcome = await runRetention({ sql: f.sql, log: silentLogger, now: NOW, retentionDays: 30 });
    expect(outcome).toEqual(removed({ staleActive: 0, notificationsDeleted: 2, processedEventsDeleted: 1 }));
    expect(await statuses()).toEqual(["FAILED", "SENT"]);
    expect(await processedIds()).toEqual([boundary]);
  });
});

describe("send requests", () => {
  test("a request whose Idempotency-Key expired goes; a live one and its notifications stay", async () => {
    const seed = (key: string, expiresAt: Date) =>
      f.sql`insert into notification_requests
              (caller, idem_key, request_hash, request_id, recipients, created_at, expires_at)
            values ('game', ${key}, 'h', gen_random_uuid(), 1, ${NOW}, ${expiresAt})`;
    await seed("expired", new Date(NOW.getTime() - 1));
    await seed("at-now", NOW);
    await seed("live", new Date(NOW.getTime() + 3_600_000));
    const outcome = await runRetention({ sql: f.sql, log: silentLogger, now: NOW, retentionDays: 30, batchSize: 1 });
    expect(outcome.requestsDeleted).toBe(1);
    const keys = await f.sql<{ idem_key: string }[]>`select idem_key from notification_requests order by idem_key`;
    expect(
      keys.map((k) => k.idem_key),
      "only the key that expired before now goes",
    ).toEqual(["at-now", "live"]);
  });
});
