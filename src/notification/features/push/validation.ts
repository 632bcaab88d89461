// Device and preference bodies, checked before their schemas so that each 400 names the field and the rule (the
// schemas in model.ts document them and check them after). A Web Push subscription's endpoint is the player's input:
// https on a host the endpoint guard allows, checked here and again at every push.
import { ApiError, badRequest } from "../../../shared/http/errors.ts";
import { parseEndpointUrl } from "../endpoints/url-guard.ts";
import {
  MAX_ENDPOINT_LENGTH,
  MAX_FCM_TOKEN_LENGTH,
  MAX_PREFERENCE_TYPES,
  type Platform,
  type Preferences,
} from "./model.ts";

/** The subscription endpoint as a URL the guard's first step accepts; https unless private addresses are allowed. */
export function parseSubscriptionEndpoint(text: string, allowPrivate: boolean): URL {
  const url = parseEndpointUrl(text);
  if (url.protocol !== "https:" && !allowPrivate) {
    throw new ApiError(400, "ENDPOINT_URL_NOT_ALLOWED", "subscription.endpoint must use https");
  }
  return url;
}

export type NewDevice =
  | { platform: "webpush"; endpoint: string; p256dh: string; auth: string }
  | { platform: "fcm"; token: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A base64url field that must decode to `bytes` bytes (RFC 8291: a P-256 point of 65, an auth secret of 16). */
function checkKey(value: unknown, field: string, bytes: number): string {
  if (typeof value !== "string" || !/^[A-Za-z0-9_-]+={0,2}$/.test(value)) {
    throw badRequest(`${field} must be base64url`);
  }
  const decoded = Buffer.from(value, "base64url");
  if (decoded.length !== bytes || (bytes === 65 && decoded[0] !== 4)) {
    throw badRequest(
      `${field} must be ${bytes === 65 ? "an uncompressed P-256 public key (65 bytes)" : `${bytes} bytes`}`,
    );
  }
  return value.replace(/=+$/, "");
}

function checkSubscription(value: unknown, allowPrivate: boolean): NewDevice {
  if (!isObject(value)) throw badRequest("subscription must be an object (PushSubscription.toJSON())");
  const { endpoint, keys } = value;
  if (typeof endpoint !== "string" || endpoint.length > MAX_ENDPOINT_LENGTH) {
    throw badRequest(`subscription.endpoint must be a URL of at most ${MAX_ENDPOINT_LENGTH} characters`);
  }
  parseSubscriptionEndpoint(endpoint, allowPrivate);
  if (!isObject(keys)) throw badRequest("subscription.keys must be an object with p256dh and auth");
  const p256dh = checkKey(keys.p256dh, "subscription.keys.p256dh", 65);
  const auth = checkKey(keys.auth, "subscription.keys.auth", 16);
  return { platform: "webpush", endpoint, p256dh, auth };
}

/** The device a body registers; 400 naming the field, or PLATFORM_NOT_CONFIGURED for a platform not set up. */
export function checkDeviceBody(
  body: unknown,
  configured: Record<Platform, boolean>,
  allowPrivate: boolean,
): NewDevice {
  if (!isObject(body)) throw badRequest("the body must be a JSON object");
  const platform = body.platform;
  if (platform !== "webpush" && platform !== "fcm") throw badRequest('platform must be "webpush" or "fcm"');
  if (!configured[platform]) {
    throw new ApiError(400, "PLATFORM_NOT_CONFIGURED", `push to ${platform} is not configured on this service`);
  }
  if (platform === "webpush") return checkSubscription(body.subscription, allowPrivate);
  const token = body.token;
  if (typeof token !== "string" || !/^[\x21-\x7e]+$/.test(token) || token.length > MAX_FCM_TOKEN_LENGTH) {
    throw badRequest(`token must be 1 to ${MAX_FCM_TOKEN_LENGTH} printable ASCII characters`);
  }
  return { platform: "fcm", token };
}

/** A notification type as the send API accepts it. */
const TYPE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

export function checkPreferences(body: unknown): Preferences {
  if (!isObject(body)) throw badRequest("the body must be a JSON object");
  if (typeof body.push !== "boolean") throw badRequest("push must be true or false");
  const types = body.types ?? {};
  if (!isObject(types)) throw badRequest('types must be an object of {"<type>": {"push": bool}}');
  const entries = Object.entries(types);
  if (entries.length > MAX_PREFERENCE_TYPES) throw badRequest(`types must name at most ${MAX_PREFERENCE_TYPES} types`);
  const checked: Preferences["types"] = {};
  for (const [type, value] of entries) {
    if (!TYPE.test(type)) throw badRequest("types' keys must be notification types ([A-Za-z][A-Za-z0-9_.-]{0,63})");
    if (!isObject(value) || typeof value.push !== "boolean")
      throw badRequest(`types.${type}.push must be true or false`);
    checked[type] = { push: value.push };
  }
  return { push: body.push, types: checked };
}
