// One attempt of one endpoint delivery: check the URL's addresses again, sign, POST to a checked address, and record
// the outcome (SENT; FAILED at the last attempt or on 410 Gone; otherwise PENDING again after a backoff). Never throws.
import { type BackoffPolicy, backoffMs, errorText } from "../../../shared/backoff.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import { contextOfTraceparent, inSpan } from "../../../shared/trace-context.ts";
import { allowedAddresses, parseEndpointUrl, type Resolve } from "../../features/endpoints/url-guard.ts";
import { webhookBody, webhookHeaders } from "../channels/webhook.ts";
import type { ClaimedDelivery, DeliveryOutcome } from "./delivery-queries.ts";
import type { OutcomeRecorder } from "./outcomes.ts";
import { type PostResult, postToEndpoint } from "./post.ts";
import type { Signer } from "./signing.ts";

/** Characters of a response kept in the attempts log. */
export const EXCERPT_LENGTH = 1_024;

export type EndpointDeliveryDeps = {
  log: Logger;
  now: Clock;
  sign: Signer;
  record: OutcomeRecorder;
  maxAttempts: number;
  backoff: BackoffPolicy;
  timeoutMs: number;
  errorMessageMaxLength: number;
  allowPrivate: boolean;
  resolve?: Resolve;
  random?: () => number;
};

/** `ownFault`: the service could not even sign (a sealed secret no configured key opens), the endpoint is not to blame. */
type Attempt = { at: Date; durationMs: number; result?: PostResult; error?: unknown; ownFault?: boolean };

function signedHeaders(deps: EndpointDeliveryDeps, d: ClaimedDelivery, at: Date, body: string) {
  const headers = webhookHeaders(d.notificationId, at, deps.sign(d, d.notificationId, at, body));
  headers["user-agent"] = "notification-webhooks";
  return headers;
}

/** Endpoint URLs parsed, by their text: every delivery to an endpoint would parse the same one (never changed after). */
const parsedUrls = new Map<string, URL>();

function endpointUrl(text: string): URL {
  let url = parsedUrls.get(text);
  if (!url) {
    url = parseEndpointUrl(text);
    if (parsedUrls.size >= 1_000) parsedUrls.clear();
    parsedUrls.set(text, url);
  }
  return url;
}

async function attempt(deps: EndpointDeliveryDeps, d: ClaimedDelivery): Promise<Attempt> {
  const n = d.notification as NonNullable<ClaimedDelivery["notification"]>;
  const at = deps.now();
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const body = webhookBody({ notificationId: d.notificationId, ...n });
  let headers: Record<string, string>;
  try {
    headers = signedHeaders(deps, d, at, body);
  } catch (error) {
    return { at, durationMs: 0, error, ownFault: true };
  }
  try {
    const url = endpointUrl(d.url);
    const addresses = await allowedAddresses(url, { allowPrivate: deps.allowPrivate, resolve: deps.resolve });
    const result = await postToEndpoint({ url, addresses, headers, body, timeoutMs: deps.timeoutMs });
    return { at, durationMs: elapsed(), result };
  } catch (error) {
    return { at, durationMs: elapsed(), error };
  }
}

function outcomeOf(deps: EndpointDeliveryDeps, d: ClaimedDelivery, a: Attempt): DeliveryOutcome {
  const base = {
    endpointId: d.endpointId,
    notificationId: d.notificationId,
    attempt: d.attemptCount,
    at: a.at,
    endpointFault: !a.ownFault,
  };
  const measured = { durationMs: a.durationMs, statusCode: a.result?.statusCode ?? null };
  const excerpt = a.result ? a.result.body.slice(0, EXCERPT_LENGTH) : null;
  const code = a.result?.statusCode;
  if (code !== undefined && code >= 200 && code < 300) {
    return { ...base, ...measured, excerpt, status: "SENT", nextAttemptAt: null, error: null };
  }
  const error = a.error
    ? errorText(a.error, deps.errorMessageMaxLength)
    : `the endpoint answered ${code}${code !== undefined && code >= 300 && code < 400 ? " (redirects are not followed)" : ""}`;
  const last = code === 410 || d.attemptCount >= deps.maxAttempts;
  const nextAttemptAt = last ? null : new Date(a.at.getTime() + backoffMs(deps.backoff, d.attemptCount, deps.random));
  return { ...base, ...measured, excerpt, status: last ? "FAILED" : "PENDING", nextAttemptAt, error };
}

/** An outcome without a request: the notification is gone or expired, or earlier claims used up every attempt. */
function unattempted(deps: EndpointDeliveryDeps, d: ClaimedDelivery, error: string | null): DeliveryOutcome {
  const common = { durationMs: null, statusCode: null, excerpt: null, nextAttemptAt: null, endpointFault: false };
  return {
    endpointId: d.endpointId,
    notificationId: d.notificationId,
    attempt: d.attemptCount,
    at: deps.now(),
    status: "FAILED",
    error,
    ...common,
  };
}

async function deliverAttempt(deps: EndpointDeliveryDeps, d: ClaimedDelivery): Promise<DeliveryOutcome> {
  if (d.notification === null) return unattempted(deps, d, "the notification no longer exists");
  const expiresAt = d.notification.expiresAt;
  if (expiresAt && expiresAt <= deps.now()) return { ...unattempted(deps, d, null), status: "SENT", expired: true };
  if (d.attemptCount > deps.maxAttempts) {
    return unattempted(deps, d, "delivery attempts exhausted: earlier claims expired without an outcome");
  }
  return outcomeOf(deps, d, await attempt(deps, d));
}

/**
 * Sends one claimed delivery inside a span of the notification's trace and records its outcome; never throws.
 * `answered` is called once the attempt is over, before its outcome is recorded.
 */
export function deliverToEndpoint(
  deps: EndpointDeliveryDeps,
  d: ClaimedDelivery,
  answered?: () => void,
): Promise<DeliveryOutcome | undefined> {
  const attributes = {
    "notification.id": d.notificationId,
    "webhook.endpoint_id": d.endpointId,
    "notification.attempt": d.attemptCount,
  };
  const parent = contextOfTraceparent(d.notification?.traceparent ?? null);
  return inSpan("notification deliver to endpoint", { parent, attributes }, async () => {
    const outcome = await deliverAttempt(deps, d);
    answered?.();
    // Made only when there is something to say: a child logger per delivery costs more than the rest of its bookkeeping.
    const log = () => deps.log.child({ endpoint_id: d.endpointId, notification_id: d.notificationId });
    try {
      if (!(await deps.record(outcome))) log().warn("lease lost before the delivery's outcome was recorded");
      // A dead endpoint fails every attempt: its retries are in the attempts log (debug here), its end is a warning.
      else if (outcome.status === "FAILED") log().warn({ error: outcome.error }, "endpoint delivery FAILED");
      else if (outcome.status === "PENDING") log().debug({ error: outcome.error }, "endpoint delivery retry scheduled");
      return outcome;
    } catch (error) {
      log().error({ err: error }, "could not record an endpoint delivery; it is tried again when its lease ends");
      return undefined;
    }
  });
}
