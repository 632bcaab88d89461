// The `webhook` channel: a JSON POST signed per the Standard Webhooks spec (webhook-id = notification_id, so a
// receiver can drop the duplicates that at-least-once delivery allows). 2xx is success, 410 Gone is permanent,
// anything else (timeouts and network errors included) is retried.
import { createHmac } from "node:crypto";
import type { Clock } from "../../../shared/runtime.ts";
import { traceparentOf } from "../../../shared/trace-context.ts";
import { type Delivery, PermanentDeliveryError, type Sender } from "./sender.ts";

export type WebhookOptions = {
  url: string;
  secret: string;
  timeoutMs: number;
  now: Clock;
  fetch?: typeof fetch;
};

const PREFIX = "whsec_";

/** The key a `whsec_` secret stands for: the base64 after the prefix, decoded. */
export function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
}

/**
 * The one webhook signer, of this channel and of the registered endpoints (endpoints/signing.ts):
 * `v1,<base64 HMAC-SHA256 of "<id>.<unix seconds>.<body>">`, byte for byte what the standardwebhooks package computes
 * and verifies (a unit test compares them), with node:crypto's HMAC at a fraction of the CPU of its JavaScript SHA-256.
 */
export function signWith(key: Buffer, webhookId: string, at: Date, body: string): string {
  const content = `${webhookId}.${Math.floor(at.getTime() / 1000)}.${body}`;
  return `v1,${createHmac("sha256", key).update(content).digest("base64")}`;
}

/** The JSON body: snake_case like the HTTP API, the event's payload nested as sent by Entitlement. */
export function webhookBody(d: Delivery): string {
  return JSON.stringify({
    notification_id: d.notificationId,
    event_id: d.eventId,
    user_id: d.userId,
    type: d.type,
    occurred_at: d.occurredAt.toISOString(),
    payload: d.payload,
  });
}

/**
 * The Standard Webhooks headers of one request, `signature` made over the same id, `at` and body; with the delivery's
 * span (delivery/service.ts, endpoints/deliver.ts), so the receiver's spans join the grant's trace. Shared by this
 * channel and the registered endpoints.
 */
export function webhookHeaders(webhookId: string, at: Date, signature: string): Record<string, string> {
  const traceparent = traceparentOf();
  return {
    "content-type": "application/json",
    "webhook-id": webhookId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signature,
    ...(traceparent ? { traceparent } : {}),
  };
}

export function createWebhookSender(options: WebhookOptions): Sender {
  const key = signingKey(options.secret);
  const doFetch = options.fetch ?? fetch;
  return async (d) => {
    const body = webhookBody(d);
    const at = options.now();
    const headers = webhookHeaders(d.notificationId, at, signWith(key, d.notificationId, at, body));
    let response: Response;
    try {
      response = await doFetch(options.url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(options.timeoutMs),
        redirect: "manual",
      });
    } catch (error) {
      const timedOut = error instanceof Error && error.name === "TimeoutError";
      throw new Error(timedOut ? `webhook timed out after ${options.timeoutMs}ms` : "webhook request failed", {
        cause: error,
      });
    }
    await response.body?.cancel().catch(() => {});
    if (response.ok) return;
    if (response.status === 410) throw new PermanentDeliveryError("webhook answered 410 Gone");
    throw new Error(`webhook answered ${response.status}`);
  };
}
