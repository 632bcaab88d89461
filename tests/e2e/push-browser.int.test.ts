// docs/examples/push.html and its service worker in a real browser (headless Chromium), served as `bun run stack`
// serves them (tools/stack-standins.ts), against Notification started as a process with Web Push on. What headless
// Chromium cannot do here is get an endpoint from its push service: pushManager.subscribe asks Google's push service
// (through the GCM channel Chromium opens), which this machine does not reach, and the promise never settles
// (docs/push.md). So that one call is answered by the test with a subscription of the Web Push stand-in (a real P-256
// key pair and auth secret, the push service an endpoint of the stand-in), after checking the options the page passed.
// Everything else is the browser's and the service's own: the worker's registration, the permission, the page's
// POST /v1/me/devices with the player's token across origins, Notification's encrypted push to the endpoint (decrypted
// by the stand-in with the subscription's private key, as the browser would), and the decrypted message delivered to
// the worker through the DevTools protocol (ServiceWorker.deliverPushMessage: the browser's own push event), which shows
// the notification and lists it on the page. Turning push off deletes the device.
import { afterAll, beforeAll, expect, setDefaultTimeout } from "bun:test";
import webpush from "web-push";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { type ExamplePages, serveExamplePages } from "../../tools/stack-standins.ts";
import { type Browser, chromiumMissing, launchChromium } from "../support/chromium.ts";
import { startTestIdp, type TestIdp } from "../support/idp.ts";
import { type DatabaseFixture, openTestDatabase, uniqueName } from "../support/infra.ts";
import { testRequiring } from "../support/required.ts";
import { NOTIFICATION_MAIN, type ServedProcess, serve } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";
import { startWebPushService, type WebPushService } from "../support/webpush-service.ts";

setDefaultTimeout(240_000);
const test = testRequiring(chromiumMissing());

const EXAMPLES = new URL("../../docs/examples", import.meta.url).pathname;
const AUDIENCE = "https://game.test";
const NOTIFY_TOKEN = "push-browser-notify-token-0123456789";
const VAPID = webpush.generateVAPIDKeys();

let f: DatabaseFixture;
let idp: TestIdp;
let pushService: WebPushService;
let browser: Browser | undefined;
let pages: ExamplePages | undefined;
let notification: ServedProcess | undefined;
let api = "";

beforeAll(async () => {
  if (chromiumMissing()) return;
  f = await openTestDatabase("push_page", { service: "notification", poolMax: 2 });
  idp = await startTestIdp();
  pushService = startWebPushService();
  pages = serveExamplePages(EXAMPLES, { api: "", vapidPublicKey: VAPID.publicKey });
  notification = serve(NOTIFICATION_MAIN, "notification", {
    DATABASE_URL: f.db.url,
    NATS_ENABLED: "false",
    NOTIFICATION_AUTH_TOKENS: tokenEntryLine("game", NOTIFY_TOKEN, "notify"),
    NOTIFICATION_ENDPOINT_SECRET_KEY: "ab".repeat(32),
    NOTIFICATION_PLAYER_CORS_ORIGINS: pages.origin,
    NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
    NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
    NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY: VAPID.publicKey,
    NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY: VAPID.privateKey,
    NOTIFICATION_WEBPUSH_SUBJECT: "mailto:ops@game.test",
    // The stand-in push service listens on http://127.0.0.1.
    NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
  });
  api = `http://127.0.0.1:${await notification.port}`;
  await waitUntil(async () => (await fetch(`${api}/readyz`).catch(() => undefined))?.status === 200, "readyz", 90_000);
  browser = await launchChromium();
  await browser.context.grantPermissions(["notifications"], { origin: pages.origin });
});

afterAll(async () => {
  await browser?.close();
  pages?.stop();
  pushService?.stop();
  notification?.child.kill("SIGTERM");
  await notification?.output;
  await idp?.close();
  await f?.close();
});

const tokenFor = (user: string) => {
  const now = Math.floor(Date.now() / 1000);
  return idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub: user, iat: now, exp: now + 600 });
};

/**
 * An init script: pushManager.subscribe answers `json` (what the browser's push service would have given), and the
 * options the page passed are recorded on window.subscribeOptions for the test to check. (Text, as the page runs it:
 * the tests are compiled without the DOM's types.)
 */
const answerSubscribe = (json: unknown) => `(() => {
  let current = null;
  PushManager.prototype.subscribe = async (options) => {
    const key = btoa(String.fromCharCode(...new Uint8Array(options.applicationServerKey)));
    window.subscribeOptions = { userVisibleOnly: options.userVisibleOnly, key };
    current = { toJSON: () => (${JSON.stringify(json)}), unsubscribe: async () => { current = null; return true; } };
    return current;
  };
  PushManager.prototype.getSubscription = async () => current;
})()`;

const ACTIVE_WORKERS = "navigator.serviceWorker.getRegistrations().then((all) => all.map((r) => r.active?.scriptURL))";
const SHOWN = `navigator.serviceWorker.ready.then((r) => r.getNotifications())
  .then((all) => all.map((n) => [n.title, n.body, n.tag]))`;

test("the page registers its worker, subscribes with the VAPID key, registers the device; a push is shown", async () => {
  const user = uniqueName("push");
  const subscription = pushService.subscribe();
  const page = await (browser as Browser).context.newPage();
  await page.addInitScript(answerSubscribe(subscription.json));
  await page.goto(`${pages?.origin}/push.html`);
  await waitUntil(
    async () => (await page.inputValue("input[name=key]")) === VAPID.publicKey,
    "the key from the config",
  );
  await page.fill("textarea[name=token]", await tokenFor(user));
  await page.fill("input[name=api]", api);
  await page.click("[data-testid=enable-push]");
  await waitUntil(
    async () => ((await page.locator("[data-testid=push-state]").textContent()) ?? "").startsWith("on: device "),
    "the page to register the device",
    30_000,
  );
  expect(await page.locator("[data-testid=error]").isVisible()).toBe(false);
  const options = await page.evaluate("window.subscribeOptions");
  expect(options, "subscribed as push services require, with the service's VAPID public key").toEqual({
    userVisibleOnly: true,
    key: Buffer.from(VAPID.publicKey, "base64url").toString("base64"),
  });
  const listed = await fetch(`${api}/v1/me/devices`, { headers: { authorization: `Bearer ${await tokenFor(user)}` } });
  const { devices } = (await listed.json()) as { devices: { device_id: string; platform: string }[] };
  expect(devices.map((d) => d.platform)).toEqual(["webpush"]);
  expect(await page.locator("[data-testid=push-state]").textContent()).toBe(`on: device ${devices[0]?.device_id}`);
  const registrations = await page.evaluate(ACTIVE_WORKERS);
  expect(registrations).toEqual([`${pages?.origin}/push-worker.js`]);

  const sent = await fetch(`${api}/v1/notifications`, {
    method: "POST",
    headers: { authorization: `Bearer ${NOTIFY_TOKEN}`, "content-type": "application/json", "idempotency-key": user },
    body: JSON.stringify({ type: "EnergyFull", user_ids: [user], title: "Energy full", body: "Back to the arena" }),
  });
  expect(sent.status).toBe(202);
  await waitUntil(() => pushService.received.some((p) => p.subscriptionId === subscription.id), "the push", 30_000);
  expect(pushService.refused).toEqual([]);
  const push = pushService.received.find((p) => p.subscriptionId === subscription.id);
  expect(push?.message).toMatchObject({ type: "EnergyFull", title: "Energy full", body: "Back to the arena" });

  await deliverToWorker(page, JSON.stringify(push?.message));
  await page.locator("[data-testid=push-item]", { hasText: "Energy full Back to the arena" }).waitFor();
  const shown = await page.evaluate(SHOWN);
  expect(shown, "the worker showed the notification").toEqual([
    ["Energy full", "Back to the arena", `seq-${push?.message.seq}`],
  ]);

  await page.click("[data-testid=disable-push]");
  await waitUntil(async () => (await page.locator("[data-testid=push-state]").textContent()) === "off", "off");
  const after = await fetch(`${api}/v1/me/devices`, { headers: { authorization: `Bearer ${await tokenFor(user)}` } });
  expect(((await after.json()) as { devices: unknown[] }).devices, "turning push off deletes the device").toEqual([]);
  await page.close();
});

test("a refused token is shown on the page, and no device is registered", async () => {
  const subscription = pushService.subscribe();
  const page = await (browser as Browser).context.newPage();
  await page.addInitScript(answerSubscribe(subscription.json));
  await page.goto(`${pages?.origin}/push.html`);
  await page.fill("textarea[name=token]", "not-a-token");
  await page.fill("input[name=api]", api);
  await page.fill("input[name=key]", VAPID.publicKey);
  await page.click("[data-testid=enable-push]");
  const error = page.locator("[data-testid=error]");
  await error.waitFor();
  expect(await error.textContent()).toContain("POST");
  expect(await error.textContent()).toContain("401 UNAUTHORIZED");
  expect(await page.locator("[data-testid=push-state]").textContent()).toBe("off");
  await page.close();
});

/** The browser's push event for the page's worker, with `data` as the decrypted payload (DevTools protocol). */
async function deliverToWorker(page: import("playwright-core").Page, data: string): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  const found = Promise.withResolvers<string>();
  cdp.on("ServiceWorker.workerRegistrationUpdated", (event) => {
    const mine = event.registrations.find((r) => r.scopeURL === `${pages?.origin}/` && !r.isDeleted);
    if (mine) found.resolve(mine.registrationId);
  });
  await cdp.send("ServiceWorker.enable");
  const registrationId = await found.promise;
  await cdp.send("ServiceWorker.deliverPushMessage", { origin: pages?.origin as string, registrationId, data });
  await cdp.detach();
}
