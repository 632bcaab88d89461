// Shared by the container tests (images and compose), which need a Docker engine and the two service images: they run
// when CONTAINER_TESTS=1 (CI sets it after building the images with scripts/images/build.sh), and are skipped
// otherwise. Image names come from ENTITLEMENT_IMAGE / NOTIFICATION_IMAGE (default: the tags compose.yml builds).
import { uniqueName } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";

export const enabled = process.env.CONTAINER_TESTS === "1";
if (!enabled) console.warn("container tests: skipped, set CONTAINER_TESTS=1 with a Docker engine and built images");

export const serviceImages = {
  entitlement: process.env.ENTITLEMENT_IMAGE || "entitlement:local",
  notification: process.env.NOTIFICATION_IMAGE || "notification:local",
};

export type Figures = Record<string, number>;

/** The status of the one notification `user` got, as the debug inbox shows it, or undefined while there is none. */
async function inboxStatus(notificationUrl: string, debugToken: string, user: string): Promise<string | undefined> {
  const response = await fetch(`${notificationUrl}/debug/notification/inbox/${user}`, {
    headers: { authorization: `Bearer ${debugToken}` },
  }).catch(() => undefined);
  if (response?.status !== 200) return undefined;
  const body = (await response.json()) as { notifications: { status: string }[] };
  return body.notifications.length === 1 ? body.notifications[0]?.status : undefined;
}

/** Grants an item over Entitlement's HTTP API and waits until Notification shows it SENT; returns the user. */
export async function grantUntilSent(
  entitlementUrl: string,
  notificationUrl: string,
  tokens: { api: string; debug: string },
): Promise<string> {
  const user = uniqueName("ctr_user");
  const grant = await fetch(`${entitlementUrl}/v1/entitlements/grants`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "idempotency-key": `ctr-${user}`,
      authorization: `Bearer ${tokens.api}`,
    },
    body: JSON.stringify({ user_id: user, stock_keeping_unit: "ctr.sku", reason: "purchase", purchase_id: "p-1" }),
  });
  if (grant.status !== 200) throw new Error(`the grant answered ${grant.status}: ${await grant.text()}`);
  await waitUntil(
    async () => (await inboxStatus(notificationUrl, tokens.debug, user)) === "SENT",
    `a SENT notification for ${user}`,
    90_000,
    250,
  );
  return user;
}

/** Polls `url` until it answers 200; returns the milliseconds since `since`. */
export async function readyAfter(url: string, since: number, timeoutMs = 120_000): Promise<number> {
  await waitUntil(
    async () => (await fetch(url, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined))?.status === 200,
    `${url} to answer 200`,
    timeoutMs,
    50,
  );
  return Date.now() - since;
}
