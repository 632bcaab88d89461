// Why a request was refused, as a value: a fixed set of reasons that label the refusal metric and the log line, and
// the one mapping to the HTTP answer. The token itself never reaches either.
import { Counter, type Registry } from "prom-client";
import { ApiError } from "../http/errors.ts";
import { createLogThrottle } from "../log-throttle.ts";
import type { Logger } from "../logger.ts";
import type { Scope } from "./tokens.ts";

/** Reasons of a 401 for a JWT, each a check of auth/jwt.ts. */
export const JWT_REASONS = [
  "malformed",
  "algorithm",
  "unknown_key",
  "signature",
  "issuer",
  "audience",
  "expired",
  "not_yet_valid",
  "type",
  "claims",
  "no_caller",
] as const;
export type JwtReason = (typeof JWT_REASONS)[number];

export type Refusal =
  /** No bearer token, or a static token that matches no digest: 401 with a bare challenge, as ever. */
  | { refused: "missing" | "unknown_token" }
  /** A JWT that failed one of its checks: 401 `invalid_token`. */
  | { refused: JwtReason }
  /** A JWT whose keys could not be had: the issuer was never reached. 503, retry later. */
  | { refused: "keys_unavailable" }
  /**
   * A valid token without the scope the request needs: 403 `insufficient_scope`. `scopeName` is that scope as the
   * caller's issuer names it (`entitlements.write`), which the challenge gives when set.
   */
  | { refused: "insufficient_scope"; scope: Scope; caller: string; scopeName?: string };

export type RefusalReason = Refusal["refused"];

/** Seconds a caller is told to wait when the issuer's keys cannot be had. */
const KEYS_RETRY_AFTER_S = 5;

/** The HTTP answer of a refusal, in the usual envelope. */
export function refusalError(refusal: Refusal): ApiError {
  switch (refusal.refused) {
    case "missing":
    case "unknown_token":
      return new ApiError(401, "UNAUTHORIZED", "a valid bearer token is required", { "www-authenticate": "Bearer" });
    case "insufficient_scope": {
      const scope = refusal.scopeName ?? refusal.scope;
      return new ApiError(403, "FORBIDDEN", `this token does not have the ${scope} scope`, {
        "www-authenticate": `Bearer error="insufficient_scope", scope="${scope}"`,
      });
    }
    case "keys_unavailable":
      return new ApiError(503, "NOT_READY", "the token issuer's keys are not available yet, retry later", {
        "retry-after": String(KEYS_RETRY_AFTER_S),
      });
    default:
      return new ApiError(401, "UNAUTHORIZED", "the bearer token is invalid or expired", {
        "www-authenticate": 'Bearer error="invalid_token"',
      });
  }
}

/**
 * `<metricPrefix>_refusals_total{reason}` (`entitlement_auth_refusals_total`) and one log line per refusal with its reason (and the caller, for a
 * missing scope). Refusals come before the rate limit, so the lines of a flood are held to one per reason per
 * `quietMs`, the next line saying how many were left out.
 */
export function createRefusalReporter(options: {
  registry: Registry;
  metricPrefix: string;
  log: Logger;
  quietMs?: number;
  now?: () => number;
}): (refusal: Refusal) => void {
  const refusals = new Counter({
    name: `${options.metricPrefix}_refusals_total`,
    help: "Requests refused by authentication (401, 503) or authorization (403), by reason.",
    labelNames: ["reason"] as const,
    registers: [options.registry],
  });
  const quiet = createLogThrottle<RefusalReason>(options);
  return (refusal) => {
    refusals.inc({ reason: refusal.refused });
    const logNow = quiet(refusal.refused);
    if (logNow === undefined) return;
    const caller = refusal.refused === "insufficient_scope" ? { caller: refusal.caller } : {};
    options.log.info({ reason: refusal.refused, ...caller, ...logNow }, "request refused");
  };
}
