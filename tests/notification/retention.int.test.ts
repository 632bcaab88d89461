import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  countStaleActive,
  deleteFinishedNotifications,
  deleteProcessedEvents,
} from "../../src/notification/retention/queries.ts";
import { runRetention } from "../../src/notification/retention/service.ts";
import type { Sql } from "../../src/shared/db.ts";
import { createLogger, silentLogger } from "../../src/shared/logger.ts";
import { createTestDatabase, type TestDatabase } from "../support/infra.ts";
import { notificationSql, seedNotification } from "./helpers.ts";

setDefaultTimeout(60_000);

let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase("notif_retention");
  sql = notificationSql(db.url);
});
afterAll(async () => {
  await sql.end();
  await db.drop();
});
beforeEach(async () => {
  await sql`truncate notifications, processed_events`;
});

const NOW = new Date("2026-02-16T00:00:00Z");
const THRESHOLD = new Date(NOW.getTime() - 30 * 86_400_000);
const before = (ms: number) => new Date(THRESHOLD.getTime() - ms);
const after = (ms: number) => new Date(THRESHOLD.getTime() + ms);

async function seedProcessed(processedAt: Date): Promise<string> {
  const id = crypto.randomUUID();
  await sql`insert into processed_events (event_id, processed_at) values (${id}, ${processedAt})`;
  return id;
}
const statuses = async () =>
  (await sql<{ status: string }[]>`select status from notifications order by status`).map((r) => r.status);
const processedIds = async () =>
  (await sql<{ event_id: string }[]>`select event_id from processed_events`).map((r) => r.event_id).sort();

describe("retention queries", () => {
  test("stale active counts only PENDING/PROCESSING strictly older than the threshold (#81)", async () => {
    await seedNotification(sql, { createdAt: before(1), status: "PENDING" });
    await seedNotification(sql, { createdAt: before(1), status: "PROCESSING" });
    await seedNotification(sql, { createdAt: THRESHOLD, status: "PENDING" });
    await seedNotification(sql, { createdAt: after(1), status: "PROCESSING" });
    await seedNotification(sql, { createdAt: before(1), status: "SENT" });
    await seedNotification(sql, { createdAt: before(1), status: "FAILED" });
    expect(await countStaleActive(sql, THRESHOLD)).toBe(2);
  });

  test("deletes only SENT/FAILED strictly older than the threshold (#82), in bounded batches", async () => {
    for (let i = 0; i < 5; i++) await seedNotification(sql, { createdAt: before(1000 + i), status: "SENT" });
    await seedNotification(sql, { createdAt: THRESHOLD, status: "SENT" });
    await seedNotification(sql, { createdAt: after(1), status: "FAILED" });
    await seedNotification(sql, { createdAt: before(1), status: "PENDING" });
    await seedNotification(sql, { createdAt: before(1), status: "PROCESSING" });
    expect(await deleteFinishedNotifications(sql, { threshold: THRESHOLD, limit: 2 })).toBe(2);
    expect(await deleteFinishedNotifications(sql, { threshold: THRESHOLD, limit: 10 })).toBe(3);
    expect(await statuses()).toEqual(["FAILED", "PENDING", "PROCESSING", "SENT"]);
  });

  test("processed events: only processed_at strictly older than the threshold goes (#84)", async () => {
    await seedProcessed(before(1));
    const boundary = await seedProcessed(THRESHOLD);
    const newer = await seedProcessed(after(1));
    expect(await deleteProcessedEvents(sql, { threshold: THRESHOLD, limit: 100 })).toBe(1);
    expect(await processedIds()).toEqual([boundary, newer].sort());
  });
});

describe("runRetention", () => {
  test("removes only old SENT and FAILED, keeps stale active rows and logs them at error (#103)", async () => {
    await seedProcessed(before(86_400_000));
    const recent = await seedProcessed(after(86_400_000));
    await seedNotification(sql, { createdAt: before(86_400_000), status: "SENT" });
    await seedNotification(sql, { createdAt: before(86_400_000), status: "FAILED" });
    await seedNotification(sql, { createdAt: before(86_400_000), status: "PENDING" });
    await seedNotification(sql, { createdAt: before(86_400_000), status: "PROCESSING" });
    await seedNotification(sql, { createdAt: after(86_400_000), status: "SENT" });
    const lines: string[] = [];
    const log = createLogger({ level: "info", service: "t", destination: { write: (l: string) => lines.push(l) } });
    const outcome = await runRetention({ sql, log, now: NOW, retentionDays: 30, batchSize: 1 });
    expect(outcome).toEqual({ staleActive: 2, notificationsDeleted: 2, processedEventsDeleted: 1 });
    expect(await statuses()).toEqual(["PENDING", "PROCESSING", "SENT"]);
    expect(await processedIds()).toEqual([recent]);
    const stale = lines.map((l) => JSON.parse(l)).find((l) => l.msg.startsWith("stale active records"));
    expect(stale?.level).toBe("error");
  });

  test("keeps rows exactly at the threshold (#104)", async () => {
    const boundary = await seedProcessed(THRESHOLD);
    await seedProcessed(before(1));
    await seedNotification(sql, { createdAt: THRESHOLD, status: "SENT" });
    await seedNotification(sql, { createdAt: THRESHOLD, status: "FAILED" });
    await seedNotification(sql, { createdAt: before(1), status: "SENT" });
    await seedNotification(sql, { createdAt: before(1), status: "FAILED" });
    const outcome = await runRetention({ sql, log: silentLogger, now: NOW, retentionDays: 30 });
    expect(outcome).toEqual({ staleActive: 0, notificationsDeleted: 2, processedEventsDeleted: 1 });
    expect(await statuses()).toEqual(["FAILED", "SENT"]);
    expect(await processedIds()).toEqual([boundary]);
  });
});
