// Entitlement's support pages in a real browser (headless Chromium) against the service started as a process: a bulk
// file uploaded through the file input shows its preview counts, is applied (the run page reloads itself until the
// result), and applied again changes nothing; a grant and an extension made in the console are undone from their
// history rows; the audit search finds the rows of a user. CONSOLE_SCREENSHOTS=1 also writes the pages to
// docs/console/*.png.
import { afterAll, beforeAll, expect, setDefaultTimeout } from "bun:test";
import { mkdirSync } from "node:fs";
import type { Page } from "playwright-core";
import type postgres from "postgres";
import { type Browser, chromiumMissing, launchChromium, navigated } from "../support/chromium.ts";
import { waitReady } from "../support/grant-flow.ts";
import { type DatabaseFixture, natsUrl, openTestDatabase, uniqueName } from "../support/infra.ts";
import { testRequiring } from "../support/required.ts";
import { ENTITLEMENT_MAIN, type ServedProcess, serve } from "../support/serve.ts";

setDefaultTimeout(240_000);
const test = testRequiring(chromiumMissing());

const SHOTS = new URL("../../docs/console/", import.meta.url).pathname;
const TOKEN = "ent_console-support-browser-token-0123456789";

let f: DatabaseFixture;
let sql: postgres.Sql;
let browser: Browser | undefined;
let service: ServedProcess | undefined;
let base = "";

beforeAll(async () => {
  if (chromiumMissing()) return;
  f = await openTestDatabase("support_browser", { service: "notification", poolMax: 2 });
  sql = f.sql;
  const digest = new Bun.CryptoHasher("sha256").update(TOKEN).digest("hex");
  service = serve(ENTITLEMENT_MAIN, "entitlement", {
    DATABASE_URL: f.db.url,
    NATS_URL: await natsUrl(),
    ENTITLEMENT_OUTBOX_ENABLED: "false",
    ENTITLEMENT_AUTH_TOKENS: `support-lead:${digest}:read+write`,
    ENTITLEMENT_CONSOLE_ENABLED: "true",
  });
  base = `http://127.0.0.1:${await service.port}`;
  await waitReady(base, "entitlement /readyz");
  browser = await launchChromium();
  const page = await browser.context.newPage();
  await page.goto(`${base}/console/users`);
  await page.fill("input[name=token]", TOKEN);
  await navigated(page, page.locator("button[type=submit]"), /\/console\/users/);
  await page.close();
});

afterAll(async () => {
  await browser?.close();
  service?.child.kill("SIGTERM");
  const log = await service?.output;
  await f?.close();
  expect(log?.includes(TOKEN) ?? false, "no token in any log line").toBe(false);
});

async function screenshot(page: Page, name: string): Promise<void> {
  if (!process.env.CONSOLE_SCREENSHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

const number = async (page: Page, id: string) => Number(await page.locator(`[data-testid=${id}]`).textContent());

async function uploadAndPreview(page: Page, csv: string): Promise<void> {
  await page.goto(`${base}/console/bulk`);
  const form = page.locator("form[data-testid=bulk-form]");
  await form.locator("input[type=file][name=file]").setInputFiles({
    name: "compensation.csv",
    mimeType: "text/csv",
    buffer: Buffer.from(csv),
  });
  await navigated(page, form.locator("button[type=submit]"), /\/console\/bulk\/preview/);
}

/** Applies the previewed file; the run page reloads itself (no script) until the result is there. */
async function applyAndWait(page: Page): Promise<void> {
  await navigated(page, page.locator("[data-testid=bulk-apply]"), /\/console\/bulk\/run/);
  await page.locator("[data-testid=bulk-result]").waitFor({ timeout: 60_000 });
}

test("a bulk file: preview counts, apply, apply again", async () => {
  const page = await (browser as Browser).context.newPage();
  const u = uniqueName("bulk");
  const rows = Array.from({ length: 40 }, (_, i) => `${u}-${i % 10},item-${Math.floor(i / 10)},grant,outage`);
  const csv = `\ufeffuser_id,stock_keeping_unit,action,reason\r\n${rows.join("\r\n")}\r\n${u}-x,,grant,outage\r\n`;
  await uploadAndPreview(page, csv);
  expect(await number(page, "bulk-will-change")).toBe(40);
  expect(await number(page, "bulk-unchanged")).toBe(0);
  expect(await number(page, "bulk-invalid")).toBe(1);
  await screenshot(page, "entitlement-bulk-preview");
  const [none] = await sql`select count(*)::int as n from entitlement.entitlements where user_id like ${`${u}%`}`;
  expect(none?.n, "a preview changes nothing").toBe(0);

  await applyAndWait(page);
  expect(await number(page, "bulk-result-changed")).toBe(40);
  expect(await number(page, "bulk-result-invalid")).toBe(1);
  await screenshot(page, "entitlement-bulk-result");
  const download = page.waitForEvent("download");
  await page.click("a[download]");
  expect((await download).suggestedFilename()).toBe("compensation.csv.result.csv");

  await uploadAndPreview(page, csv);
  expect(await number(page, "bulk-will-change")).toBe(0);
  expect(await number(page, "bulk-unchanged")).toBe(40);
  await applyAndWait(page);
  expect(await number(page, "bulk-result-already_applied"), "applying again replays, changes nothing").toBe(40);
  const [audit] = await sql`select count(*)::int as n from entitlement.entitlement_audit where user_id like ${`${u}%`}`;
  expect(audit?.n).toBe(40);
});

test("undo of a console grant from its history row, then the audit search finds both rows", async () => {
  const page = await (browser as Browser).context.newPage();
  const user = `player-${uniqueName("undo")}`;
  await page.goto(`${base}/console/users?user_id=${user}`);
  const grant = page.locator("form[data-testid=grant-form]");
  await grant.locator("input[name=stock_keeping_unit]").fill("cape");
  await grant.locator("input[name=reason]").fill("wrong user");
  await navigated(page, grant.locator("button[type=submit]"), /user_id=/);
  await navigated(page, page.locator("[data-testid=entitlement-row] a"), /\/console\/history/);
  const row = page.locator("[data-testid=history-row]", { has: page.locator("[data-testid=undo]") });
  await row.locator("input[name=reason]").fill("granted by mistake");
  await screenshot(page, "entitlement-undo");
  await navigated(page, row.locator("[data-testid=undo]"), /\/console\/history/);
  expect(await page.locator("[data-testid=notice]").textContent()).toContain("Undid the grant");
  const first = page.locator("[data-testid=history-row]").first();
  expect(await first.textContent()).toContain("REVOKE");
  expect(await first.textContent()).toContain("undo:");
  expect(await page.locator("[data-testid=undo]").count(), "an undone change offers no undo").toBe(0);

  await page.goto(`${base}/console/audit`);
  const search = page.locator("form[data-testid=audit-search]");
  await search.locator("input[name=user_id]").fill(user);
  await navigated(page, search.locator("button[type=submit]"), /user_id=/);
  const rows = page.locator("[data-testid=audit-row]");
  expect(await rows.count()).toBe(2);
  expect(await rows.first().textContent(), "newest first").toContain("REVOKE");
  await screenshot(page, "entitlement-audit");
});

test("undo of a console extension from its history row: the expiry it replaced is back", async () => {
  const page = await (browser as Browser).context.newPage();
  const user = `player-${uniqueName("undo_extend")}`;
  const [first, later] = [10, 40].map((days) => new Date(Date.now() + days * 86_400_000).toISOString());
  await page.goto(`${base}/console/users?user_id=${user}`);
  const grant = page.locator("form[data-testid=grant-form]");
  await grant.locator("input[name=stock_keeping_unit]").fill("pass");
  await grant.locator("input[name=reason]").fill("support");
  await grant.locator("input[name=expires_at]").fill(first as string);
  await navigated(page, grant.locator("button[type=submit]"), /user_id=/);
  const extend = page.locator("form[data-testid=extend-form]");
  await extend.locator("input[name=expires_at]").fill(later as string);
  await extend.locator("input[name=reason]").fill("support");
  await navigated(page, extend.locator("button[type=submit]"), /user_id=/);
  expect(await page.locator("[data-testid=entitlement-row]").textContent()).toContain(later as string);

  await navigated(page, page.locator("[data-testid=entitlement-row] a"), /\/console\/history/);
  const row = page.locator("[data-testid=history-row]", { has: page.locator("[data-testid=undo]") });
  expect(await row.textContent(), "the extension offers the undo").toContain("EXTEND");
  await row.locator("input[name=reason]").fill("extended by mistake");
  await navigated(page, row.locator("[data-testid=undo]"), /\/console\/history/);
  expect(await page.locator("[data-testid=notice]").textContent()).toContain("Undid the extension");
  expect(await page.locator("[data-testid=history-row]").first().textContent()).toContain("undo:");
  expect(await page.locator("[data-testid=undo]").count(), "an undone change offers no undo").toBe(0);
  await page.goto(`${base}/console/users?user_id=${user}`);
  expect(await page.locator("[data-testid=entitlement-row]").textContent()).toContain(first as string);
  await page.close();
});
