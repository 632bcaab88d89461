// Variables of the webhook endpoints (endpoints/): the admin API's tokens, the key that seals the endpoints' secrets,
// the SSRF guard's one exception, auto-disable, and how many deliveries run at once. Beside config.ts, not in
// endpoints/, since the endpoints' code reads the configuration.
import { parseTokenEntries, type Scope } from "../../../shared/auth/tokens.ts";
import {
  Bool,
  backoffPolicy,
  backoffRules,
  backoffVariables,
  Duration,
  Int,
  Optional,
  type Rule,
} from "../../../shared/config.ts";

const BACKOFF = "NOTIFICATION_ENDPOINT";

const TOKENS = "NOTIFICATION_AUTH_TOKENS";
/** read and write for the endpoints admin API, notify for the send API. */
const SCOPES: readonly Scope[] = ["read", "write", "notify"];

/** A key of 32 bytes, given as 64 hex characters or as base64; undefined otherwise. */
export function parseSecretKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, "hex");
  const decoded = /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed) ? Buffer.from(trimmed, "base64") : undefined;
  return decoded?.length === 32 ? decoded : undefined;
}

export const EndpointVariables = {
  NOTIFICATION_AUTH_TOKENS: Optional({
    description:
      "Tokens of the webhook endpoints admin API, name:sha256hex:scopes,... as ENTITLEMENT_AUTH_TOKENS (read for GET, " +
      "write for the rest) plus notify for POST /v1/notifications; scopes combine as read+write+notify. Unset: the " +
      "/v1/webhook-endpoints and /v1/notifications routes answer 404.",
  }),
  NOTIFICATION_ENDPOINT_SECRET_KEY: Optional({
    description:
      "32 bytes (64 hex characters or base64) that encrypt the endpoints' signing secrets in the database; required " +
      "with NOTIFICATION_AUTH_TOKENS and by every replica that delivers to endpoints. Generate: openssl rand -hex 32.",
  }),
  NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS: Optional({
    description:
      "Keys that sealed secrets before NOTIFICATION_ENDPOINT_SECRET_KEY replaced them, comma-separated: they only open. " +
      "Drop them once `notification endpoints reseal` has sealed every secret with the current key.",
  }),
  NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: Bool(false, {
    description:
      "Let endpoints reach loopback, private and link-local addresses (tests, receivers on a private network): the " +
      "SSRF guard is off.",
  }),
  NOTIFICATION_ENDPOINT_DISABLE_AFTER: Duration("5d", {
    minimum: 1,
    description: "An endpoint whose every attempt has failed for this long is disabled.",
  }),
  NOTIFICATION_ENDPOINT_MAX_ATTEMPTS: Int(15, {
    minimum: 1,
    description:
      "Attempts of one delivery to an endpoint before it ends FAILED. With the endpoint backoff's defaults the last " +
      "comes some 3 hours (1.5 to 4.5) after the first, so a receiver down for an hour or two misses nothing.",
  }),
  ...backoffVariables(BACKOFF),
  NOTIFICATION_ENDPOINT_BACKOFF_MAX: Duration("1h", {
    description: "Cap of the exponential backoff of endpoint deliveries, before jitter.",
  }),
  NOTIFICATION_ENDPOINT_CONCURRENCY: Int(8, {
    minimum: 1,
    maximum: 1000,
    description: "Deliveries to one endpoint in flight at once, per process: what a hanging endpoint can hold.",
  }),
  NOTIFICATION_ENDPOINT_MAX_IN_FLIGHT: Int(200, {
    minimum: 1,
    maximum: 10000,
    description: "Deliveries to all endpoints in flight at once, per process.",
  }),
};

type EndpointEnv = Parameters<typeof backoffPolicy<typeof BACKOFF>>[1] & {
  NOTIFICATION_AUTH_TOKENS?: string;
  NOTIFICATION_ENDPOINT_SECRET_KEY?: string;
  NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS?: string;
  NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: boolean;
  NOTIFICATION_ENDPOINT_DISABLE_AFTER: number;
  NOTIFICATION_ENDPOINT_MAX_ATTEMPTS: number;
  NOTIFICATION_ENDPOINT_CONCURRENCY: number;
  NOTIFICATION_ENDPOINT_MAX_IN_FLIGHT: number;
};

const tokensAreValid: Rule<EndpointEnv> = (e) =>
  parseTokenEntries(e.NOTIFICATION_AUTH_TOKENS ?? "", TOKENS, SCOPES).problems;

const keyIsValid: Rule<EndpointEnv> = (e) => {
  const key = e.NOTIFICATION_ENDPOINT_SECRET_KEY;
  if (key !== undefined && key !== "" && !parseSecretKey(key)) {
    return "NOTIFICATION_ENDPOINT_SECRET_KEY must be 32 bytes: 64 hex characters or base64 (openssl rand -hex 32)";
  }
  const previous = (e.NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS ?? "").split(",").filter((k) => k.trim() !== "");
  if (previous.some((k) => !parseSecretKey(k))) {
    return "NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS must be keys of 32 bytes (64 hex characters or base64), comma-separated";
  }
  if (e.NOTIFICATION_AUTH_TOKENS?.trim() && !key) {
    return "NOTIFICATION_ENDPOINT_SECRET_KEY must be set when NOTIFICATION_AUTH_TOKENS is (it seals the endpoints' secrets)";
  }
  return undefined;
};

export const endpointRules: Rule<EndpointEnv>[] = [tokensAreValid, keyIsValid, ...backoffRules(BACKOFF)];

export function endpointSettings(e: EndpointEnv) {
  const key = e.NOTIFICATION_ENDPOINT_SECRET_KEY ? parseSecretKey(e.NOTIFICATION_ENDPOINT_SECRET_KEY) : undefined;
  return {
    /** Empty: the admin API is not served. */
    tokens: parseTokenEntries(e.NOTIFICATION_AUTH_TOKENS ?? "", TOKENS, SCOPES).entries,
    /** Undefined: no endpoint can be registered or delivered to by this process. */
    secretKey: key,
    /** Keys that only open secrets sealed before the current key. */
    previousSecretKeys: (e.NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS ?? "")
      .split(",")
      .flatMap((k) => parseSecretKey(k) ?? []),
    allowPrivate: e.NOTIFICATION_ENDPOINT_ALLOW_PRIVATE,
    disableAfterMs: e.NOTIFICATION_ENDPOINT_DISABLE_AFTER,
    maxAttempts: e.NOTIFICATION_ENDPOINT_MAX_ATTEMPTS,
    backoff: backoffPolicy(BACKOFF, e),
    perEndpoint: e.NOTIFICATION_ENDPOINT_CONCURRENCY,
    maxInFlight: e.NOTIFICATION_ENDPOINT_MAX_IN_FLIGHT,
  };
}
export type EndpointSettings = ReturnType<typeof endpointSettings>;
