// The push rows' own bookkeeping: finished pushes go with the notifications' retention (the endpoints' deliveries do
// too), waiting ones stay; and pushes that end together are finalized in one statement, each under its own lease.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { upsertDevice } from "../../src/notification/features/push/queries.ts";
import { createPushRecorder } from "../../src/notification/work/push/outcomes.ts";
import type { PushOutcome } from "../../src/notification/work/push/queries.ts";
import { runRetention } from "../../src/notification/work/retention/service.ts";
import type { Db } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { uniqueName, useTestDatabase } from "../support/infra.ts";
import { seedNotification } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("push_rows", { service: "notification", resetEach: true });
const NOW = new Date("2026-06-01T00:00:00Z");
const DAY = 86_400_000;
const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY);

async function device(): Promise<string> {
  const row = await upsertDevice(f.sql, {
    deviceId: crypto.randomUUID(),
    userId: uniqueName("p"),
    device: { platform: "fcm", token: uniqueName("token") },
    now: daysAgo(100),
  });
  return row.device_id;
}

type Push = { status: string; createdAt: Date; lockedBy?: string };

async function push(deviceId: string, p: Push): Promise<string> {
  const notificationId = await seedNotification(f.sql, { createdAt: p.createdAt, status: "SENT" });
  await f.sql`
    insert into push_deliveries (device_id, notification_id, service, status, attempt_count, next_attempt_at,
      locked_by, created_at)
    values (${deviceId}, ${notificationId}, 'fcm', ${p.status}, 1, ${p.createdAt}, ${p.lockedBy ?? null},
      ${p.createdAt})`;
  return notificationId;
}

const statuses = async () =>
  (await f.sql<{ status: string; created_at: Date }[]>`select status, created_at from push_deliveries`)
    .map((r) => `${r.status}@${Math.round((NOW.getTime() - r.created_at.getTime()) / DAY)}d`)
    .sort();

describe("retention", () => {
  test("finished pushes older than the retention go; waiting ones and newer ones stay", async () => {
    const d = await device();
    for (const status of ["SENT", "FAILED", "EXPIRED", "PENDING", "PROCESSING"]) {
      await push(d, { status, createdAt: daysAgo(40) });
      await push(d, { status, createdAt: daysAgo(10) });
    }
    await push(d, { status: "SENT", createdAt: daysAgo(30) });
    const outcome = await runRetention({ sql: f.sql, log: silentLogger, now: NOW, retentionDays: 30, batchSize: 2 });
    expect(outcome.pushesDeleted).toBe(3);
    expect(await statuses()).toEqual(
      [
        "PENDING@40d",
        "PROCESSING@40d",
        "SENT@30d",
        "SENT@10d",
        "FAILED@10d",
        "EXPIRED@10d",
        "PENDING@10d",
        "PROCESSING@10d",
      ].sort(),
    );
  });
});

describe("finalizing", () => {
  test("outcomes that end together go out as one statement, each under its own lease", async () => {
    const [a, b] = [await device(), await device()];
    const at = new Date();
    const held = { status: "PROCESSING", createdAt: at, lockedBy: "me" };
    const sent = await push(a, held);
    const retry = await push(a, held);
    const skipped = await push(b, held);
    const theirs = await push(b, { ...held, lockedBy: "other" });
    let statements = 0;
    const counting = {
      unsafe: (...args: Parameters<typeof f.sql.unsafe>) => {
        statements++;
        return f.sql.unsafe(...args);
      },
    } as unknown as Db;
    const record = createPushRecorder({ sql: counting, lockedBy: "me" });
    const outcome = (deviceId: string, notificationId: string, status: PushOutcome["status"]): PushOutcome => ({
      deviceId,
      notificationId,
      status,
      at,
      nextAttemptAt: status === "PENDING" ? new Date(at.getTime() + 60_000) : null,
      error: status === "PENDING" ? "503" : null,
      statusCode: status === "PENDING" ? 503 : null,
    });
    const results = await Promise.all([
      record(outcome(a, sent, "SENT")),
      record(outcome(a, retry, "PENDING")),
      record(outcome(b, skipped, "SKIPPED")),
      record(outcome(b, theirs, "SENT")),
    ]);
    expect(results, "another worker's push is left alone").toEqual([true, true, true, false]);
    expect(statements, "one statement for the four").toBe(1);
    const rows = await f.sql<{ notification_id: string; status: string; locked_by: string | null }[]>`
      select notification_id, status, locked_by from push_deliveries`;
    const byId = new Map(rows.map((r) => [r.notification_id, [r.status, r.locked_by]]));
    expect(byId.get(sent)).toEqual(["SENT", null]);
    expect(byId.get(retry)).toEqual(["PENDING", null]);
    expect(byId.has(skipped), "a push no longer wanted is dropped").toBe(false);
    expect(byId.get(theirs)).toEqual(["PROCESSING", "other"]);
    const [seen] = await f.sql<{ last_success_at: Date | null }[]>`
      select last_success_at from player_devices where device_id = ${a}`;
    expect(seen?.last_success_at?.getTime()).toBe(at.getTime());
    expect(await record(outcome(a, sent, "SENT")), "a finished push is not finalized again").toBe(false);
  });
});
