// docs/examples/player.html in a real browser (headless Chromium), against both services started as processes: a
// player signs in with their access token, sees their inbox and its unread badge, and a grant made through
// Entitlement's API appears on the page while it is open, through the live stream. The page is served from the origin
// that forwards /v1/ to Notification, as a reverse proxy in front of both would.
import { afterAll, beforeAll, expect, setDefaultTimeout } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { type Browser, chromiumMissing, launchChromium } from "../support/chromium.ts";
import { postGrant, waitReady } from "../support/grant-flow.ts";
import { startTestIdp, type TestIdp } from "../support/idp.ts";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../support/infra.ts";
import { pipelineNatsNames, pipelineStreams } from "../support/nats-names.ts";
import { testRequiring } from "../support/required.ts";
import { type ServedProcess, serve } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(240_000);
const test = testRequiring(chromiumMissing());

const ENTITLEMENT = new URL("../../src/entitlement/main.ts", import.meta.url).pathname;
const NOTIFICATION = new URL("../../src/notification/main.ts", import.meta.url).pathname;
const PAGE = new URL("../../docs/examples/player.html", import.meta.url).pathname;
const AUDIENCE = "https://game.test";

let db: TestDatabase;
let sql: postgres.Sql;
let idp: TestIdp;
let browser: Browser | undefined;
let site: ReturnType<typeof Bun.serve> | undefined;
const services: ServedProcess[] = [];
const stream = uniqueName("player").replaceAll("_", "-");
let entitlementUrl = "";

beforeAll(async () => {
  if (chromiumMissing()) return;
  db = await createTestDatabase("player_page");
  sql = postgres(db.url, { max: 2, onnotice: () => {} });
  idp = await startTestIdp();
  const common = { DATABASE_URL: db.url, NATS_URL: await natsUrl(), ...pipelineNatsNames(stream, `${stream}-durable`) };
  const entitlement = serve(ENTITLEMENT, "entitlement", { ...common, ENTITLEMENT_AUTH_DISABLED: "true" });
  const notification = serve(NOTIFICATION, "notification", {
    ...common,
    NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
    NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
    NOTIFICATION_PLAYER_NATS_SUBJECT: `${stream}.players`,
  });
  services.push(entitlement, notification);
  entitlementUrl = `http://127.0.0.1:${await entitlement.port}`;
  const notificationUrl = `http://127.0.0.1:${await notification.port}`;
  await waitReady(entitlementUrl, "entitlement /readyz");
  await waitReady(notificationUrl, "notification /readyz");
  site = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: (request) => {
      const url = new URL(request.url);
      if (url.pathname === "/") return new Response(Bun.file(PAGE), { headers: { "content-type": "text/html" } });
      return fetch(new Request(`${notificationUrl}${url.pathname}${url.search}`, request));
    },
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  site?.stop(true);
  for (const s of services) s.child.kill("SIGTERM");
  await Promise.all(services.map((s) => s.output));
  await idp?.close();
  await sql?.end();
  if (db) {
    const nc = await connect({ servers: await natsUrl() });
    const jsm = await jetstreamManager(nc);
    for (const name of pipelineStreams(stream)) await jsm.streams.delete(name).catch(() => false);
    await nc.close();
    await db.drop();
  }
});

async function grant(user: string, sku: string): Promise<void> {
  const response = await postGrant(entitlementUrl, { user, sku, key: `${user}-${sku}` });
  expect(response.status).toBe(200);
}

test("a player's page shows the inbox with its unread badge, and a grant appears on it live", async () => {
  const user = uniqueName("player");
  await grant(user, "shield.bronze");
  await waitUntil(
    async () => (await sql`select 1 from notification.notifications where user_id = ${user}`).length === 1,
    "the first grant's notification",
    60_000,
  );
  const now = Math.floor(Date.now() / 1000);
  const token = await idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub: user, iat: now, exp: now + 600 });

  const page = await (browser as Browser).context.newPage();
  await page.goto(`http://127.0.0.1:${site?.port}/`);
  await page.fill("textarea[name=token]", token);
  await page.click("[data-testid=sign-in]");
  const items = page.locator("[data-testid=notification-item]");
  await items.first().waitFor();
  expect(await items.count()).toBe(1);
  expect(await page.locator("[data-testid=unread-badge]").textContent()).toBe("1");
  await waitUntil(async () => (await page.locator("[data-testid=stream-state]").textContent()) === "live", "live");

  await grant(user, "sword.gold");
  await page.locator("[data-testid=notification-item]", { hasText: "sword.gold" }).waitFor({ timeout: 30_000 });
  expect(await items.count(), "the new notification is added, none repeated").toBe(2);
  expect(await page.locator("[data-testid=unread-badge]").textContent()).toBe("2");

  await page.click("[data-testid=read-all]");
  await waitUntil(
    async () => (await page.locator("[data-testid=unread-badge]").textContent()) === "0",
    "the badge to show no unread notification",
  );
});

test("SIGTERM with a player's stream open: Notification closes the stream and exits 0", async () => {
  const now = Math.floor(Date.now() / 1000);
  const token = await idp.forge({
    iss: idp.issuer,
    aud: AUDIENCE,
    sub: uniqueName("leaving"),
    iat: now,
    exp: now + 600,
  });
  const notification = services[1] as ServedProcess;
  const response = await fetch(`http://127.0.0.1:${await notification.port}/v1/me/notifications/stream`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.status).toBe(200);
  const body = response.text().catch(() => "");
  notification.child.kill("SIGTERM");
  expect(await notification.child.exited, "a clean exit, not held by the open stream").toBe(0);
  await body;
});
