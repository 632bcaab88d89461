// Who may call what (CONTRACT §3.3): each request needs the scope its route declares (auth/scope.ts), checked before
// anything else about the request is looked at, so a caller without a valid token learns nothing but 401. /healthz
// and /readyz stay open for probes; /metrics and /openapi.json need `read` unless ENTITLEMENT_METRICS_PUBLIC.
import { ApiError } from "../../shared/http/errors.ts";
import { type RouteScopes, scopeOf } from "./scope.ts";
import { findTokenEntry, type Scope, type TokenEntry } from "./tokens.ts";

export type AuthSettings = {
  /** ENTITLEMENT_AUTH_DISABLED: every request is the anonymous caller ''. */
  disabled: boolean;
  tokens: readonly TokenEntry[];
  /** ENTITLEMENT_METRICS_PUBLIC: /metrics and /openapi.json need no token. */
  metricsPublic: boolean;
};

/** What a request needs: nothing, a token with a scope, or any valid token (unknown paths: 404 only for callers). */
export type Access = "open" | Scope | "authenticated";

/** The probes and documents of the shared HTTP skeleton (shared/http/app.ts), which declares no scopes. */
const OPEN = new Set(["/healthz", "/readyz"]);
const DOCS = new Set(["/metrics", "/openapi.json"]);
/** Longer than any token this service issues (36 bytes of base64url); longer headers are never hashed. */
const MAX_TOKEN_LENGTH = 512;
const BEARER = /^Bearer +([\x21-\x7e]+) *$/i;

export function requiredAccess(scopes: RouteScopes, method: string, path: string, metricsPublic: boolean): Access {
  if (OPEN.has(path)) return "open";
  if (DOCS.has(path)) return metricsPublic ? "open" : "read";
  return scopeOf(scopes, method, path) ?? "authenticated";
}

const unauthorized = () =>
  new ApiError(401, "UNAUTHORIZED", "a valid bearer token is required", { "www-authenticate": "Bearer" });

const forbidden = (scope: Scope) =>
  new ApiError(403, "FORBIDDEN", `this token does not have the ${scope} scope`, {
    "www-authenticate": `Bearer error="insufficient_scope", scope="${scope}"`,
  });

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | null): string | undefined {
  if (header === null || header.length > MAX_TOKEN_LENGTH + 16) return undefined;
  return BEARER.exec(header)?.[1];
}

/** An authenticated caller: the token name ('' when authentication is disabled) and what it may do. */
export type Caller = { name: string; scopes: ReadonlySet<Scope> };

const ANONYMOUS: Caller = { name: "", scopes: new Set<Scope>(["read", "write"]) };

/**
 * The caller of a request, or undefined when it needs no token; throws 401 for a missing or unknown token and 403 for
 * a known token without the scope the request needs.
 */
export function authenticate(settings: AuthSettings, access: Access, authorization: string | null): Caller | undefined {
  if (access === "open") return undefined;
  if (settings.disabled) return ANONYMOUS;
  const token = bearerToken(authorization);
  const entry = token === undefined ? undefined : findTokenEntry(settings.tokens, token);
  if (!entry) throw unauthorized();
  if (access !== "authenticated" && !entry.scopes.has(access)) throw forbidden(access);
  return { name: entry.name, scopes: entry.scopes };
}

/** The name of a caller `authenticate` accepted; none recorded means the request was never authenticated (401). */
export function callerName(caller: Caller | undefined): string {
  if (!caller) throw unauthorized();
  return caller.name;
}
