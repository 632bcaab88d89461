// One claimed push: skip it when its notification expired or is gone or the player no longer wants it, send it to the
// device's push service, and turn the answer into the push's outcome (SENT; PENDING again after the backoff or the
// service's Retry-After, whichever is longer; FAILED at the last attempt or on a refusal; the device deleted when the
// service calls it gone). Never throws.
import { type BackoffPolicy, backoffMs } from "../../../shared/backoff.ts";
import { isExpired, type PushNotification } from "./payload.ts";
import type { ClaimedPush, PushOutcome } from "./queries.ts";
import type { PushResult } from "./result.ts";
import type { WebPushSubscription } from "./webpush.ts";

export type PushSenders = {
  webpush?: (subscription: WebPushSubscription, n: PushNotification) => Promise<PushResult>;
  fcm?: (token: string, n: PushNotification) => Promise<PushResult>;
};

export type PushDeliveryDeps = {
  senders: PushSenders;
  now: () => Date;
  maxAttempts: number;
  backoff: BackoffPolicy;
  errorMessageMaxLength: number;
  random?: () => number;
};

/** What became of one push: the row's outcome, and whether its device is to be deleted. */
export type Delivered = { outcome: PushOutcome; result: PushResult["outcome"] | "expired" | "skipped"; gone: boolean };

async function send(deps: PushDeliveryDeps, p: ClaimedPush, n: PushNotification): Promise<PushResult> {
  if (p.platform === "webpush" && deps.senders.webpush && p.endpoint && p.p256dh && p.auth) {
    return deps.senders.webpush({ endpoint: p.endpoint, keys: { p256dh: p.p256dh, auth: p.auth } }, n);
  }
  if (p.platform === "fcm" && deps.senders.fcm && p.token) return deps.senders.fcm(p.token, n);
  // The platform's keys were removed from the configuration since the device registered.
  return { outcome: "retry", statusCode: null, error: `push to ${p.platform} is not configured`, retryAfterMs: null };
}

function ended(p: ClaimedPush, at: Date, status: PushOutcome["status"], error: string | null): PushOutcome {
  return {
    deviceId: p.deviceId,
    notificationId: p.notificationId,
    status,
    at,
    nextAttemptAt: null,
    error,
    statusCode: null,
  };
}

export async function deliverPush(deps: PushDeliveryDeps, p: ClaimedPush): Promise<Delivered> {
  const at = deps.now();
  if (p.notification === null) {
    return { outcome: ended(p, at, "FAILED", "the notification no longer exists"), result: "skipped", gone: false };
  }
  // Decided now, not when the notification was stored: the player may have turned push off or lost the device since.
  if (!p.wanted) return { outcome: ended(p, at, "SKIPPED", null), result: "skipped", gone: false };
  const n: PushNotification = { notificationId: p.notificationId, ...p.notification };
  if (isExpired(n, at)) return { outcome: ended(p, at, "EXPIRED", null), result: "expired", gone: false };
  if (p.attemptCount > deps.maxAttempts) {
    const error = "push attempts exhausted: earlier claims expired without an outcome";
    return { outcome: ended(p, at, "FAILED", error), result: "failed", gone: false };
  }
  const r = await send(deps, p, n);
  const base = { deviceId: p.deviceId, notificationId: p.notificationId, at, statusCode: r.statusCode };
  if (r.outcome === "sent")
    return { outcome: { ...base, status: "SENT", nextAttemptAt: null, error: null }, result: "sent", gone: false };
  const error = r.error.slice(0, deps.errorMessageMaxLength);
  if (r.outcome === "gone")
    return { outcome: { ...base, status: "FAILED", nextAttemptAt: null, error }, result: "gone", gone: true };
  if (r.outcome === "failed" || p.attemptCount >= deps.maxAttempts) {
    return { outcome: { ...base, status: "FAILED", nextAttemptAt: null, error }, result: "failed", gone: false };
  }
  const wait = Math.max(backoffMs(deps.backoff, p.attemptCount, deps.random), r.retryAfterMs ?? 0);
  const nextAttemptAt = new Date(at.getTime() + wait);
  return { outcome: { ...base, status: "PENDING", nextAttemptAt, error }, result: "retry", gone: false };
}
