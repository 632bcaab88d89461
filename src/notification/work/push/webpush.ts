// One Web Push (RFC 8030): the payload encrypted aes128gcm for the subscription's keys (RFC 8291) and the VAPID
// Authorization (RFC 8292), both made by the `web-push` library (generateRequestDetails); the request then goes out
// through the endpoints' own POST (work/endpoints/post.ts), to the addresses the URL guard checked at this push, with
// its timeout and connection reuse. A subscription's endpoint is the player's input: https on a host the guard allows.
import webpush from "web-push";
import { ApiError } from "../../../shared/http/errors.ts";
import { allowedAddresses, type Resolve } from "../../features/endpoints/url-guard.ts";
import { parseSubscriptionEndpoint } from "../../features/push/validation.ts";
import { postToEndpoint } from "../endpoints/post.ts";
import { collapseKeyOf, type PushNotification, pushContent, topicOf, ttlSeconds, webPushPlaintext } from "./payload.ts";
import { type PushResult, resultOfStatus, unanswered } from "./result.ts";

export type WebPushSubscription = { endpoint: string; keys: { p256dh: string; auth: string } };

export type VapidSettings = { publicKey: string; privateKey: string; subject: string };

export type WebPushDeps = {
  vapid: VapidSettings;
  now: () => Date;
  /** Seconds a push service keeps a push that has no expires_at (NOTIFICATION_PUSH_TTL). */
  defaultTtlSeconds: number;
  timeoutMs: number;
  allowPrivate: boolean;
  resolve?: Resolve;
};

/** VAPID JWTs last 12 hours (at most 24 are allowed); one is made per push service origin and kept until 1 hour before. */
const VAPID_LIFETIME_S = 12 * 3600;
const VAPID_RENEW_BEFORE_S = 3600;

/**
 * The VAPID Authorization per push service origin (the JWT's `aud`): signing ES256 at every push cost more CPU than
 * the encryption; a token for one origin serves every subscription there until it nears its end.
 */
export function createVapidAuthorizations(vapid: VapidSettings, now: () => Date) {
  const kept = new Map<string, { authorization: string; renewAt: number }>();
  return (audience: string): string => {
    const nowS = Math.floor(now().getTime() / 1000);
    const found = kept.get(audience);
    if (found && found.renewAt > nowS) return found.authorization;
    const exp = nowS + VAPID_LIFETIME_S;
    const headers = webpush.getVapidHeaders(
      audience,
      vapid.subject,
      vapid.publicKey,
      vapid.privateKey,
      "aes128gcm",
      exp,
    );
    if (kept.size >= 1_000) kept.clear();
    kept.set(audience, { authorization: headers.Authorization, renewAt: exp - VAPID_RENEW_BEFORE_S });
    return headers.Authorization;
  };
}

/** The request of one push, as the library builds it: headers as strings, the encrypted body. */
export function webPushRequest(
  deps: WebPushDeps,
  authorization: (audience: string) => string,
  subscription: WebPushSubscription,
  n: PushNotification,
) {
  const collapseKey = collapseKeyOf(n);
  const details = webpush.generateRequestDetails(subscription, webPushPlaintext(pushContent(n)), {
    TTL: ttlSeconds(n, deps.now(), deps.defaultTtlSeconds),
    contentEncoding: "aes128gcm",
    urgency: "normal",
    // No vapidDetails: the Authorization made above is passed as a header, so the library does not sign again.
    headers: { Authorization: authorization(new URL(subscription.endpoint).origin) },
    ...(collapseKey === null ? {} : { topic: topicOf(collapseKey) }),
  });
  const headers: Record<string, string> = { "user-agent": "notification-push" };
  for (const [name, value] of Object.entries(details.headers)) {
    // The POST sets the length of what it sends itself.
    if (name.toLowerCase() !== "content-length") headers[name.toLowerCase()] = String(value);
  }
  return { headers, body: details.body as Buffer };
}

/** A Web Push sender; a refusal of the guard fails the push, an unanswered request is retried. Never throws. */
export function createWebPushSender(deps: WebPushDeps) {
  const authorization = createVapidAuthorizations(deps.vapid, deps.now);
  return async (subscription: WebPushSubscription, n: PushNotification): Promise<PushResult> => {
    let request: ReturnType<typeof webPushRequest>;
    let url: URL;
    try {
      url = parseSubscriptionEndpoint(subscription.endpoint, deps.allowPrivate);
      request = webPushRequest(deps, authorization, subscription, n);
    } catch (error) {
      return { outcome: "failed", statusCode: null, error: messageOf(error) };
    }
    try {
      const addresses = await allowedAddresses(url, { allowPrivate: deps.allowPrivate, resolve: deps.resolve });
      const answer = await postToEndpoint({ url, addresses, ...request, timeoutMs: deps.timeoutMs });
      const error = `the push service answered ${answer.statusCode}`;
      return resultOfStatus(answer.statusCode, error, answer.retryAfter, deps.now());
    } catch (error) {
      if (error instanceof ApiError && error.code === "ENDPOINT_URL_NOT_ALLOWED") {
        return { outcome: "failed", statusCode: null, error: error.message };
      }
      return unanswered(messageOf(error));
    }
  };
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
