// docs/examples/player.html in a real browser (headless Chromium), against both services started as processes: a
// player signs in with their access token, sees their inbox and its unread badge, and a grant made through
// Entitlement's API appears on the page while it is open, through the live stream; the page shows why a sign-in failed,
// and stops (without reconnecting) when a newer stream of the player closes its own. The page is served from the origin
// that forwards /v1/ to Notification, as a reverse proxy in front of both would, and from an origin of its own that
// NOTIFICATION_PLAYER_CORS_ORIGINS lists, calling Notification directly.
import { afterAll, beforeAll, expect, setDefaultTimeout } from "bun:test";
import type postgres from "postgres";
import { freePort } from "../../tools/infra/net.ts";
import { type Browser, chromiumMissing, launchChromium } from "../support/chromium.ts";
import { postGrant, waitReady } from "../support/grant-flow.ts";
import { startTestIdp, type TestIdp } from "../support/idp.ts";
import { type DatabaseFixture, natsUrl, openTestDatabase, uniqueName } from "../support/infra.ts";
import { deletePipelineStreams, pipelineNatsNames } from "../support/nats-names.ts";
import { testRequiring } from "../support/required.ts";
import { ENTITLEMENT_MAIN, NOTIFICATION_MAIN, type ServedProcess, serve } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(240_000);
const test = testRequiring(chromiumMissing());

const PAGE = new URL("../../docs/examples/player.html", import.meta.url).pathname;
const AUDIENCE = "https://game.test";

let f: DatabaseFixture;
let sql: postgres.Sql;
let idp: TestIdp;
let browser: Browser | undefined;
let site: ReturnType<typeof Bun.serve> | undefined;
/** Serves the page alone, on an origin of its own (another port is another origin). */
let elsewhere: ReturnType<typeof Bun.serve> | undefined;
const services: ServedProcess[] = [];
const stream = uniqueName("player").replaceAll("_", "-");
let entitlementUrl = "";
let notificationUrl = "";
/** The stream tickets the page asked for, by the player's token: each is one (re)connection. */
const ticketsAsked = new Map<string, number>();

beforeAll(async () => {
  if (chromiumMissing()) return;
  f = await openTestDatabase("player_page", { service: "notification", poolMax: 2 });
  sql = f.sql;
  idp = await startTestIdp();
  const common = {
    DATABASE_URL: f.db.url,
    NATS_URL: await natsUrl(),
    ...pipelineNatsNames(stream, `${stream}-durable`),
  };
  const entitlement = serve(ENTITLEMENT_MAIN, "entitlement", { ...common, ENTITLEMENT_AUTH_DISABLED: "true" });
  elsewhere = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(Bun.file(PAGE), { headers: { "content-type": "text/html" } }),
  });
  const notification = serve(NOTIFICATION_MAIN, "notification", {
    ...common,
    NOTIFICATION_PLAYER_CORS_ORIGINS: `http://127.0.0.1:${elsewhere.port}`,
    NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
    NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
    NOTIFICATION_PLAYER_NATS_SUBJECT: `${stream}.players`,
  });
  services.push(entitlement, notification);
  entitlementUrl = `http://127.0.0.1:${await entitlement.port}`;
  notificationUrl = `http://127.0.0.1:${await notification.port}`;
  await waitReady(entitlementUrl, "entitlement /readyz");
  await waitReady(notificationUrl, "notification /readyz");
  site = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: (request) => {
      const url = new URL(request.url);
      if (url.pathname === "/") return new Response(Bun.file(PAGE), { headers: { "content-type": "text/html" } });
      if (url.pathname === "/v1/me/stream-tickets") {
        const token = request.headers.get("authorization") ?? "";
        ticketsAsked.set(token, (ticketsAsked.get(token) ?? 0) + 1);
      }
      return fetch(new Request(`${notificationUrl}${url.pathname}${url.search}`, request));
    },
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  site?.stop(true);
  elsewhere?.stop(true);
  for (const s of services) s.child.kill("SIGTERM");
  await Promise.all(services.map((s) => s.output));
  await idp?.close();
  if (f) {
    await deletePipelineStreams(await natsUrl(), stream);
    await f.close();
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

const tokenFor = (user: string) => {
  const now = Math.floor(Date.now() / 1000);
  return idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub: user, iat: now, exp: now + 600 });
};

async function signIn(token: string, api = "", from = site) {
  const page = await (browser as Browser).context.newPage();
  await page.goto(`http://127.0.0.1:${from?.port}/`);
  await page.fill("textarea[name=token]", token);
  await page.fill("input[name=api]", api);
  await page.click("[data-testid=sign-in]");
  return page;
}

test("a sign-in that fails says why on the page: a refused token, an API base that does not answer", async () => {
  const refused = await signIn("not-a-token");
  const error = refused.locator("[data-testid=error]");
  await error.waitFor();
  expect(await error.textContent()).toContain("401 UNAUTHORIZED");
  expect(await refused.locator("[data-testid=sign-in-form]").isVisible(), "still on the sign-in form").toBe(true);

  // A port nothing listens on: the browser gets no answer, as it gets none that CORS would let it read.
  const nowhere = `http://127.0.0.1:${freePort()}`;
  const unreachable = await signIn(await tokenFor(uniqueName("away")), nowhere);
  const failure = unreachable.locator("[data-testid=error]");
  await failure.waitFor();
  expect(await failure.textContent()).toContain(`${nowhere}/v1/me/notifications?limit=50 failed: no answer`);
  await Promise.all([refused.close(), unreachable.close()]);
});

test("from an origin NOTIFICATION_PLAYER_CORS_ORIGINS lists, the page calling Notification directly works", async () => {
  const user = uniqueName("cors");
  await grant(user, "shield.silver");
  await waitUntil(
    async () => (await sql`select 1 from notification.notifications where user_id = ${user}`).length === 1,
    "the grant's notification",
    60_000,
  );
  const page = await signIn(await tokenFor(user), notificationUrl, elsewhere);
  try {
    const items = page.locator("[data-testid=notification-item]");
    await items.first().waitFor();
    expect(await items.count()).toBe(1);
    await waitUntil(async () => (await page.locator("[data-testid=stream-state]").textContent()) === "live", "live");
    await grant(user, "sword.silver");
    await page.locator("[data-testid=notification-item]", { hasText: "sword.silver" }).waitFor({ timeout: 30_000 });
    expect(await items.count(), "the stream works across origins too").toBe(2);
  } finally {
    await page.close();
  }
});

test("a page whose stream a newer one closes for the per-player limit says so and does not reconnect", async () => {
  const user = uniqueName("tabs");
  const token = await tokenFor(user);
  const page = await signIn(token);
  await waitUntil(async () => (await page.locator("[data-testid=stream-state]").textContent()) === "live", "live");
  // Five more streams of the player (the default NOTIFICATION_STREAM_MAX_PER_USER): the sixth closes the page's.
  const others = new AbortController();
  for (let i = 0; i < 5; i++) {
    const response = await fetch(`${notificationUrl}/v1/me/notifications/stream`, {
      headers: { authorization: `Bearer ${token}` },
      signal: others.signal,
    });
    expect(response.status).toBe(200);
  }
  try {
    await waitUntil(
      async () => (await page.locator("[data-testid=stream-state]").textContent()) === "closed",
      "the page to show its stream closed",
    );
    expect(await page.locator("[data-testid=error]").textContent()).toContain("too many are open for this player");
    const asked = ticketsAsked.get(`Bearer ${token}`);
    // What is checked is an absence: three of the page's reconnect delays (1 s) pass without a new ticket.
    await Bun.sleep(3_000);
    expect(ticketsAsked.get(`Bearer ${token}`), "no reconnection after stream_limit").toBe(asked);
    expect(await page.locator("[data-testid=stream-state]").textContent()).toBe("closed");
    await page.click("[data-testid=reconnect]");
    await waitUntil(
      async () => (await page.locator("[data-testid=stream-state]").textContent()) === "live",
      "live again",
    );
  } finally {
    others.abort();
    await page.close();
  }
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
