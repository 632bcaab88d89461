// Notification's /console through the real app on its own database: off unless enabled, sign-in with the debug token,
// a user's notifications with status, attempts and last error, and the delivery DLQ with requeue (CSRF-protected).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { createApp } from "../../src/notification/app.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { consoleClient, hiddenField, signIn } from "../support/console-client.ts";
import { useTestDatabase } from "../support/infra.ts";
import { seedNotification, testMetrics } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_console", { service: "notification", resetEach: true });
const TOKEN = "debug-token-for-the-console-0123";

function app(enabled = true) {
  return createApp({
    sql: f.sql,
    log: silentLogger,
    registry: testMetrics().registry,
    version: "test",
    consumerReady: undefined,
    debugApi: { enabled: false, token: TOKEN },
    console: { enabled, idleMs: 60_000, alwaysSecure: false },
  });
}

async function failed(userId: string, error: string): Promise<string> {
  const id = await seedNotification(f.sql, { userId, status: "FAILED", attemptCount: 10, nextRetryAt: null });
  await f.sql`update notifications set last_error = ${error} where notification_id = ${id}`;
  await f.sql`
    insert into notification_dlq (dlq_id, notification_id, event_id, payload_json, error_message)
    select gen_random_uuid(), notification_id, event_id, payload_json, ${error} from notifications
    where notification_id = ${id}`;
  return id;
}

describe("notification console", () => {
  test("off unless enabled: 404", async () => {
    expect((await app(false).handle(new Request("http://localhost/console/sign-in"))).status).toBe(404);
  });

  test("signs in with the debug token only", async () => {
    const a = app();
    const client = consoleClient((r) => a.handle(r));
    expect((await client.get("/console/dlq")).location).toBe("/console/sign-in");
    expect((await signIn(client, "not-the-debug-token")).status).toBe(401);
    expect((await signIn(client, TOKEN)).status).toBe(303);
    expect((await client.get("/console/dlq")).status).toBe(200);
  });

  test("a user's notifications show status, attempts and last error, escaped", async () => {
    const a = app();
    const client = consoleClient((r) => a.handle(r));
    await signIn(client, TOKEN);
    await seedNotification(f.sql, { userId: "player-1", status: "SENT" });
    await failed("player-1", "webhook said <b>503</b>");
    const page = await client.get("/console/users?user_id=player-1");
    const rows = page.text.split('data-testid="notification-row"').slice(1);
    expect(rows).toHaveLength(2);
    expect(page.text).toContain(">SENT<");
    expect(page.text).toMatch(
      />FAILED<\/span><\/td>\n<td>10<\/td><td class="error-text"><bdi>webhook said &lt;b&gt;503&lt;\/b&gt;<\/bdi>/,
    );
  });

  test("the DLQ lists FAILED notifications; requeue needs the CSRF token and gives a fresh attempt budget", async () => {
    const a = app();
    const client = consoleClient((r) => a.handle(r));
    await signIn(client, TOKEN);
    const id = await failed("player-2", "timeout");
    const page = await client.get("/console/dlq");
    expect(page.text).toContain(id);
    const form = {
      csrf: hiddenField(page.text, "csrf", 'action="/console/dlq/requeue"'),
      form_token: hiddenField(page.text, "form_token", 'action="/console/dlq/requeue"'),
      notification_id: id,
    };
    expect((await client.post("/console/dlq/requeue", { ...form, csrf: "forged" })).status).toBe(403);
    const [still] = await f.sql`select status from notifications where notification_id = ${id}`;
    expect(still?.status, "a forged form requeues nothing").toBe("FAILED");
    const reply = await client.post("/console/dlq/requeue", form);
    expect(reply.location).toBe("/console/dlq");
    const [row] = await f.sql`select status, attempt_count from notifications where notification_id = ${id}`;
    expect(row).toEqual({ status: "PENDING", attempt_count: 0 });
    const after = await client.get("/console/dlq");
    expect(after.text).toContain(`requeued ${id}`);
    expect(after.text).toContain('data-testid="dlq-empty"');
  });
});
