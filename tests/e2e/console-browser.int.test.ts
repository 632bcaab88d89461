// Both consoles in a real browser (headless Chromium) against both services started as processes on this file's
// database and streams: sign in, look a user up, grant, see the row ACTIVE, see the notification SENT on
// Notification's page, requeue from the DLQ; and the security cases: no session leads to the sign-in page, a forged or
// missing CSRF token is 403, a script in a user id is rendered as text. CONSOLE_SCREENSHOTS=1 also writes the pages
// to docs/console/*.png (the pictures in docs/operations.md).
import { afterAll, beforeAll, expect, setDefaultTimeout } from "bun:test";
import { mkdirSync } from "node:fs";
import type { Page } from "playwright-core";
import type postgres from "postgres";
import { type Browser, chromiumMissing, launchChromium, navigated } from "../support/chromium.ts";
import { waitReady } from "../support/grant-flow.ts";
import { type DatabaseFixture, natsUrl, openTestDatabase, uniqueName } from "../support/infra.ts";
import { deletePipelineStreams, pipelineNatsNames } from "../support/nats-names.ts";
import { testRequiring } from "../support/required.ts";
import { ENTITLEMENT_MAIN, NOTIFICATION_MAIN, type ServedProcess, serve } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(240_000);
const test = testRequiring(chromiumMissing());

const SHOTS = new URL("../../docs/console/", import.meta.url).pathname;
const TOKEN = "ent_console-browser-test-token-0123456789";
const DEBUG_TOKEN = "console-browser-debug-token-0123456789";

let f: DatabaseFixture;
let sql: postgres.Sql;
let browser: Browser | undefined;
const services: ServedProcess[] = [];
const stream = uniqueName("console").replaceAll("_", "-");
let entitlementUrl = "";
let notificationUrl = "";

beforeAll(async () => {
  if (chromiumMissing()) return;
  f = await openTestDatabase("console", { service: "notification", poolMax: 2 });
  sql = f.sql;
  const names = pipelineNatsNames(stream, `${stream}-durable`);
  const common = { DATABASE_URL: f.db.url, NATS_URL: await natsUrl(), ...names };
  const digest = new Bun.CryptoHasher("sha256").update(TOKEN).digest("hex");
  const entitlement = serve(ENTITLEMENT_MAIN, "entitlement", {
    ...common,
    ENTITLEMENT_AUTH_TOKENS: `support-lead:${digest}:read+write`,
    ENTITLEMENT_CONSOLE_ENABLED: "true",
  });
  const notification = serve(NOTIFICATION_MAIN, "notification", {
    ...common,
    NOTIFICATION_DEBUG_API_TOKEN: DEBUG_TOKEN,
    NOTIFICATION_CONSOLE_ENABLED: "true",
  });
  services.push(entitlement, notification);
  entitlementUrl = `http://127.0.0.1:${await entitlement.port}`;
  notificationUrl = `http://127.0.0.1:${await notification.port}`;
  await waitReady(entitlementUrl, "entitlement /readyz");
  await waitReady(notificationUrl, "notification /readyz");
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  for (const s of services) s.child.kill("SIGTERM");
  const logs = await Promise.all(services.map((s) => s.output));
  if (f) {
    await deletePipelineStreams(await natsUrl(), stream);
    await f.close();
  }
  for (const log of logs) {
    expect(log.includes(TOKEN) || log.includes(DEBUG_TOKEN), "no token in any log line").toBe(false);
  }
});

async function screenshot(page: Page, name: string): Promise<void> {
  if (!process.env.CONSOLE_SCREENSHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

/** Opens `url`; without a session the console shows its sign-in page, where `token` signs in. */
async function signInAt(page: Page, url: string, token: string, shot?: string): Promise<void> {
  await page.goto(url);
  expect(new URL(page.url()).pathname, "no session: the sign-in page").toBe("/console/sign-in");
  if (shot) await screenshot(page, shot);
  await page.fill("input[name=token]", token);
  await navigated(page, page.locator("button[type=submit]"), /\/console\/users/);
}

/** The little of the DOM the tampering below touches (the test is compiled without the DOM's types). */
type FormNode = { querySelector: (selector: string) => { value: string; remove: () => void } | null };

async function lookUp(page: Page, userId: string): Promise<void> {
  await page.fill("input[name=user_id]", userId);
  await navigated(page, page.locator("[data-testid=lookup-form] button"), /user_id=/);
}

/** Reloads until `selector` holds `text` (the delivery happens in the background). */
async function reloadUntil(page: Page, selector: string, text: string, what: string): Promise<void> {
  await waitUntil(
    async () => {
      await page.reload();
      const texts = await page.locator(selector).allTextContents();
      return texts.some((t) => t.includes(text));
    },
    what,
    60_000,
    500,
  );
}

test("support grants in Entitlement's console and sees it ACTIVE, then SENT in Notification's", async () => {
  const page = await (browser as Browser).context.newPage();
  const user = `player-${uniqueName("b")}`;
  await signInAt(page, `${entitlementUrl}/console/users`, TOKEN, "entitlement-sign-in");
  await lookUp(page, user);
  const grant = page.locator("form[data-testid=grant-form]");
  await grant.locator("input[name=stock_keeping_unit]").fill("sword.gold");
  await grant.locator("input[name=reason]").fill("support-compensation");
  await navigated(page, grant.locator("button[type=submit]"), /user_id=/);
  const row = page.locator("[data-testid=entitlement-row]");
  await expect(row.count()).resolves.toBe(1);
  // A pending point reservation, so the page (and its picture) shows the points part with its cancel button.
  const reserved = await fetch(`${entitlementUrl}/v1/points/reservations`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": `r-${user}`, authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({
      user_id: user,
      point_amount: 500,
      execute_at: new Date(Date.now() + 30 * 86_400_000).toISOString(),
      reason: "weekly bonus",
    }),
  });
  expect(reserved.status).toBe(201);
  await page.reload();
  expect(await page.locator("[data-testid=reservation-row]").textContent()).toContain("PENDING");
  expect(await row.textContent()).toContain("sword.gold");
  expect(await row.locator("[data-testid=status]").textContent()).toBe("ACTIVE");
  await screenshot(page, "entitlement-user");
  await navigated(page, row.locator("a"), /\/console\/history/);
  expect(await page.locator("[data-testid=history-row]").textContent()).toContain("console:support-lead");
  await screenshot(page, "entitlement-history");
  await page.goto(`${entitlementUrl}/console/outbox`);
  await screenshot(page, "entitlement-outbox");

  const npage = await (browser as Browser).context.newPage();
  await signInAt(npage, `${notificationUrl}/console/users`, DEBUG_TOKEN, "notification-sign-in");
  await lookUp(npage, user);
  await reloadUntil(
    npage,
    "[data-testid=notification-row] [data-testid=status]",
    "SENT",
    "the grant's notification SENT",
  );
  await screenshot(npage, "notification-user");
});

test("a FAILED delivery is requeued from the DLQ page and then delivered", async () => {
  const user = `player-${uniqueName("dlq")}`;
  const [failed] = await sql<{ id: string }[]>`
    with n as (
      insert into notification.notifications
        (notification_id, event_id, user_id, type, occurred_at, payload_json, status, attempt_count, last_error)
      values (gen_random_uuid(), gen_random_uuid(), ${user}, 'EntitlementGranted', now(),
              jsonb_build_object('user_id', ${user}::text, 'stock_keeping_unit', 'cape'), 'FAILED', 10, 'webhook timed out')
      returning *
    ), d as (
      insert into notification.notification_dlq (dlq_id, notification_id, event_id, payload_json, error_message)
      select gen_random_uuid(), notification_id, event_id, payload_json, last_error from n
    )
    select notification_id::text as id from n`;
  const page = await (browser as Browser).context.newPage();
  await page.goto(`${notificationUrl}/console/dlq`);
  if (new URL(page.url()).pathname === "/console/sign-in") {
    await page.fill("input[name=token]", DEBUG_TOKEN);
    await navigated(page, page.locator("button[type=submit]"), /\/console\/users/);
    await page.goto(`${notificationUrl}/console/dlq`);
  }
  const entry = page.locator("[data-testid=dlq-row]", { hasText: failed?.id ?? "?" });
  await screenshot(page, "notification-dlq");
  await navigated(page, entry.locator("button"), /\/console\/dlq/);
  expect(await page.locator("[data-testid=notice]").textContent()).toContain(`requeued ${failed?.id}`);
  await page.goto(`${notificationUrl}/console/users?user_id=${encodeURIComponent(user)}`);
  await reloadUntil(page, "[data-testid=notification-row] [data-testid=status]", "SENT", "the requeued delivery SENT");
});

test("a forged or missing CSRF token is 403 and grants nothing", async () => {
  const page = await (browser as Browser).context.newPage();
  const user = `player-${uniqueName("csrf")}`;
  await page.goto(`${entitlementUrl}/console/users?user_id=${user}`);
  if (new URL(page.url()).pathname === "/console/sign-in") {
    await page.fill("input[name=token]", TOKEN);
    await navigated(page, page.locator("button[type=submit]"), /\/console\/users/);
    await page.goto(`${entitlementUrl}/console/users?user_id=${user}`);
  }
  const submit = async (tamper: (form: FormNode) => void) => {
    await page.goto(`${entitlementUrl}/console/users?user_id=${user}`);
    const grant = page.locator("form[data-testid=grant-form]");
    await grant.locator("input[name=stock_keeping_unit]").fill("forged.item");
    await grant.locator("input[name=reason]").fill("attack");
    await grant.evaluate(tamper);
    const [response] = await Promise.all([page.waitForEvent("response"), grant.locator("button[type=submit]").click()]);
    return response.status();
  };
  expect(
    await submit((f) => {
      const input = f.querySelector("input[name=csrf]");
      if (input) input.value = "forged";
    }),
  ).toBe(403);
  expect(await submit((f) => f.querySelector("input[name=csrf]")?.remove())).toBe(403);
  const rows = await sql`select 1 from entitlement.entitlements where user_id = ${user}`;
  expect(rows, "nothing was granted").toHaveLength(0);
});

test("a script in a user id is shown as text and never runs", async () => {
  const context = (browser as Browser).context;
  const page = await context.newPage();
  let dialogs = 0;
  page.on("dialog", (d) => {
    dialogs++;
    void d.dismiss();
  });
  const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>\u202Etxt.exe`;
  await page.goto(`${entitlementUrl}/console/users`);
  if (new URL(page.url()).pathname === "/console/sign-in") {
    await page.fill("input[name=token]", TOKEN);
    await navigated(page, page.locator("button[type=submit]"), /\/console\/users/);
  }
  await lookUp(page, evil);
  expect(await page.locator("[data-testid=user-id]").textContent()).toBe(evil);
  expect(await page.locator("main script, main img").count(), "no element was made from the id").toBe(0);
  expect(dialogs).toBe(0);
});
