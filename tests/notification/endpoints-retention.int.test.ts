// Retention of the endpoints' rows: finished deliveries and the attempts log go with the same threshold as the
// notifications; deliveries still waiting stay.
import { expect, setDefaultTimeout, test } from "bun:test";
import { runRetention } from "../../src/notification/work/retention/service.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { useTestDatabase } from "../support/infra.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_endpoints_retention", { service: "notification" });
const NOW = new Date("2026-02-16T00:00:00Z");
const OLD = new Date(NOW.getTime() - 31 * 86_400_000);
const RECENT = new Date(NOW.getTime() - 29 * 86_400_000);

test("old SENT and FAILED deliveries and old attempts are deleted; waiting deliveries and recent rows stay", async () => {
  const endpointId = crypto.randomUUID();
  await f.sql`
    insert into webhook_endpoints (endpoint_id, url, secret_ciphertext, created_at, updated_at)
    values (${endpointId}, 'https://hooks.example/', 'sealed', ${OLD}, ${OLD})`;
  const rows: [string, Date][] = [
    ["SENT", OLD],
    ["FAILED", OLD],
    ["PENDING", OLD],
    ["SENT", RECENT],
  ];
  for (const [status, at] of rows) {
    const notificationId = crypto.randomUUID();
    await f.sql`
      insert into webhook_deliveries (endpoint_id, notification_id, status, next_attempt_at, created_at)
      values (${endpointId}, ${notificationId}, ${status}, ${at}, ${at})`;
    await f.sql`
      insert into webhook_attempts (endpoint_id, notification_id, attempt, at, status_code, duration_ms)
      values (${endpointId}, ${notificationId}, 1, ${at}, 200, 3)`;
  }
  const outcome = await runRetention({ sql: f.sql, log: silentLogger, now: NOW, retentionDays: 30 });
  expect(outcome).toMatchObject({ deliveriesDeleted: 2, attemptsDeleted: 3 });
  const left = await f.sql<{ status: string }[]>`select status from webhook_deliveries order by status`;
  expect(left.map((r) => r.status)).toEqual(["PENDING", "SENT"]);
  const [attempts] = await f.sql<{ n: number }[]>`select count(*)::int as n from webhook_attempts`;
  expect(attempts?.n).toBe(1);
});
