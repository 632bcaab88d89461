// The steps of the end-to-end tests that run both services as processes: wait for a service's /readyz, post a grant
// (authentication disabled), wait until a user's notifications are SENT in the Notification schema.
import type postgres from "postgres";
import { waitUntil } from "./wait.ts";

/** Resolves once `${base}/readyz` answers 200. */
export function waitReady(base: string, what: string, timeoutMs = 60_000): Promise<unknown> {
  return waitUntil(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, what, timeoutMs);
}

/** POSTs a grant of `sku` to `user` with `key` as its Idempotency-Key; the caller asserts the status. */
export function postGrant(
  entitlementUrl: string,
  grant: { user: string; sku: string; key: string },
): Promise<Response> {
  return fetch(`${entitlementUrl}/v1/entitlements/grants`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": grant.key },
    body: JSON.stringify({
      user_id: grant.user,
      stock_keeping_unit: grant.sku,
      reason: "purchase",
      purchase_id: "p-1",
    }),
  });
}

/** Resolves once `user` has exactly `count` notifications (default 1), every one SENT. */
export function waitSent(sql: postgres.Sql, user: string, what: string, count = 1, timeoutMs = 60_000) {
  return waitUntil(
    async () => {
      const rows = await sql`select status from notification.notifications where user_id = ${user}`;
      return rows.length === count && rows.every((r) => r.status === "SENT");
    },
    what,
    timeoutMs,
  );
}
