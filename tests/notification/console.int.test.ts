// Notification's /console through the real app on its own database: off unless enabled, sign-in with the debug token,
// a user's notifications with status, attempts and last error, and the delivery DLQ with requeue (CSRF-protected).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { consoleClient, hiddenField, signIn } from "../support/console-client.ts";
import { unreachableDatabase, useTestDatabase } from "../support/infra.ts";
import { rawRequest } from "../support/raw-http.ts";
import { notificationApp } from "./app.helpers.ts";
import { seedNotification } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_console", { service: "notification", resetEach: true });
const TOKEN = "debug-token-for-the-console-0123";

function app(enabled = true, sql = f.sql) {
  return notificationApp(sql, {
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

  test("signs in with the debug token only, and its form says so", async () => {
    const a = app();
    const client = consoleClient((r) => a.handle(r));
    expect((await client.get("/console/sign-in")).text).toContain("Debug token (NOTIFICATION_DEBUG_API_TOKEN)");
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

  test("each row shows the SKU of its entitlement (none for other kinds)", async () => {
    const a = app();
    const client = consoleClient((r) => a.handle(r));
    await signIn(client, TOKEN);
    const granted = await seedNotification(f.sql, { userId: "player-sku" });
    await f.sql`update notifications set payload_json = payload_json || '{"stock_keeping_unit": "sword\u202e"}'
      where notification_id = ${granted}`;
    const matched = await seedNotification(f.sql, { userId: "player-sku" });
    await f.sql`update notifications set type = 'MatchFound' where notification_id = ${matched}`;
    const page = await client.get("/console/users?user_id=player-sku");
    expect(page.text).toContain("<th>SKU</th>");
    expect(page.text).toContain('<td data-testid="sku"><bdi>sword\u202e</bdi></td>');
    expect(page.text).toContain('<td data-testid="sku"><span class="none">none</span></td>');
  });

  test("a user id the API accepts (an ideographic or no-break space) is looked up, not refused", async () => {
    const a = app();
    const client = consoleClient((r) => a.handle(r));
    await signIn(client, TOKEN);
    for (const userId of ["\u3000", "\u00a0"]) {
      await seedNotification(f.sql, { userId });
      const page = await client.get(`/console/users?user_id=${encodeURIComponent(userId)}`);
      expect(page.status, JSON.stringify(userId)).toBe(200);
      expect(page.text.split('data-testid="notification-row"')).toHaveLength(2);
    }
  });

  test("during a database outage every page is 503 with Retry-After, not a 500", async () => {
    const down = unreachableDatabase("notification");
    const a = app(true, down);
    const client = consoleClient((r) => a.handle(r));
    await signIn(client, TOKEN);
    for (const path of ["/console/users?user_id=u1", "/console/dlq"]) {
      const page = await client.get(path);
      expect([page.status, page.headers.get("retry-after")], path).toEqual([503, "1"]);
    }
    await down.end();
  });

  test("refused sign-ins are limited per client: one client's guesses never slow another's sign-in", async () => {
    const server = app().listen({ hostname: "127.0.0.1", port: 0 });
    const port = server.server?.port ?? 0;
    try {
      const base = `http://127.0.0.1:${port}`;
      const guesser = consoleClient((r) => fetch(r), base);
      const statuses = new Set<number>();
      for (let i = 0; i < 20; i++) statuses.add((await signIn(guesser, `guess-${i}`)).status);
      expect([...statuses], "the guesser is slowed down").toEqual([401, 429]);
      // Another client (another address): its own sign-in form, then a wrong token, then the right one.
      const form = await fetch(`${base}/console/sign-in`);
      const csrf = hiddenField(await form.text(), "csrf");
      const post = (token: string) => {
        const body = new URLSearchParams({ csrf, token }).toString();
        return rawRequest(
          port,
          `POST /console/sign-in HTTP/1.1\r\nHost: localhost\r\nCookie: notification_console_signin=${csrf}\r\n` +
            `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
          10_000,
          "127.0.0.2",
        );
      };
      expect((await post("a-typo")).status, "another client's mistake is a plain 401").toBe(401);
      expect((await post(TOKEN)).status).toBe(303);
    } finally {
      await server.stop();
    }
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
    expect(after.text).toContain(`requeued <bdi>${id}</bdi>: FAILED -> PENDING, attempts 10 -> 0`);
    expect(after.text).toContain('data-testid="dlq-empty"');
  });
});
