// Who may call what (docs/security.md): each request needs the scope its route declares (auth/scope.ts), checked before
// anything else about the request is looked at, so a caller without a valid token learns nothing but 401. /healthz
// and /readyz stay open for probes; /metrics and /openapi.json need `read` unless ENTITLEMENT_METRICS_PUBLIC.
// A bearer token is either a static token (auth/tokens.ts) or, when an issuer is configured, a JWT access token
// (auth/jwt.ts); its shape alone decides which, so neither kind is ever checked as the other.
import { PROBE_PATHS } from "../http/app.ts";
import { ApiError } from "../http/errors.ts";
import type { Logger } from "../logger.ts";
import type { JwtAuthenticator } from "./jwt.ts";
import { type Refusal, refusalError } from "./refusal.ts";
import { type DeclaredRoute, type RouteScopes, routeScopes, scopeOf } from "./scope.ts";
import { type Caller, findTokenEntry, type Scope, type TokenEntry } from "./tokens.ts";

export type { Caller };

export type AuthSettings = {
  /** ENTITLEMENT_AUTH_DISABLED: every request is the anonymous caller ''. */
  disabled: boolean;
  tokens: readonly TokenEntry[];
  /** ENTITLEMENT_METRICS_PUBLIC: /metrics and /openapi.json need no token. */
  metricsPublic: boolean;
  /** Set when ENTITLEMENT_AUTH_JWT_ISSUER is: JWT-shaped tokens go here, never to the static digests. */
  jwt?: JwtAuthenticator;
  /** Told of every refusal (its metric and log line; auth/refusal.ts). */
  onRefusal?: (refusal: Refusal) => void;
};

/** What a request needs: nothing, a token with a scope, or any valid token (unknown paths: 404 only for callers). */
export type Access = "open" | Scope | "authenticated";

/**
 * The edge's decision for one request: the access it needs and the only route it may then reach (its declared path);
 * `route` undefined: no route may run (an unknown path or method: 404/405 follow). `under`: instead, any route whose
 * path starts with it (the console's, which check their own session).
 */
export type EdgeDecision = { access: Access; route: string | undefined; under?: string };

/** The probes and documents of the shared HTTP skeleton (shared/http/app.ts), which declares no scopes. */
const OPEN = new Set(PROBE_PATHS);
const DOCS = new Set(["/metrics", "/openapi.json"]);
/** Longer than any token this service issues (36 bytes of base64url); longer headers are never hashed. */
const MAX_TOKEN_LENGTH = 512;
/** A JWT may be longer (an issuer's token with many claims is 1–3 KB); the whole head stays within 8 KiB. */
const MAX_JWT_LENGTH = 6 * 1024;
const BEARER = /^Bearer +([\x21-\x7e]+) *$/i;
/**
 * A JWS in compact form: three base64url parts, the last empty for an unsigned (`alg: none`) token, which the JWT path
 * then refuses by name. `ent_` tokens never contain a dot.
 */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export function requiredAccess(
  scopes: RouteScopes,
  method: string,
  path: string,
  metricsPublic: boolean,
): EdgeDecision {
  const route = method === "GET" || method === "HEAD" ? path : undefined;
  if (OPEN.has(path)) return { access: "open", route };
  if (DOCS.has(path)) return { access: metricsPublic ? "open" : "read", route };
  const scoped = scopeOf(scopes, method, path);
  return scoped ? { access: scoped.scope, route: scoped.route } : { access: "authenticated", route: undefined };
}

/** Whether the route Elysia matched is one the edge decided the request may reach. */
function routeAllowed(decision: EdgeDecision | undefined, matched: string): boolean {
  if (decision === undefined) return false;
  return decision.route === matched || (decision.under !== undefined && matched.startsWith(decision.under));
}

/** Which matched routes a route check holds to the edge's decision: all, or those that declare a scope. */
export type GuardedRoutes = "every route" | "scoped routes";

/**
 * An edge's record of what it decided for each request, and its last line of defence: the route Elysia then matches
 * must be one the decision allows, should the router and the edge ever read a request differently (they share one
 * canonical path, shared/http/path.ts); any other is logged and answered 404. The routes' declared scopes are read at
 * the first request, once every route is mounted. Both services' edges are built on it.
 */
export function createRouteCheck(routesOf: () => readonly DeclaredRoute[], log: Logger, guarded: GuardedRoutes) {
  let scopes: RouteScopes | undefined;
  const decisions = new WeakMap<Request, EdgeDecision>();
  const declared = () => (scopes ??= routeScopes(routesOf()));
  return {
    /** The scopes the routes declare (read at the first call). */
    scopes: declared,
    /** Records the decision for `request` (in onRequest, before it is routed). */
    decide: (request: Request, decision: EdgeDecision) => void decisions.set(request, decision),
    /** Throws 404 unless the decision for `request` allows the `matched` route (in onBeforeHandle). */
    check(request: Request, matched: string): void {
      if (guarded === "scoped routes" && !declared().some((s) => s.path === matched)) return;
      if (routeAllowed(decisions.get(request), matched)) return;
      log.error({ route: matched }, "a request reached a route the edge did not authorise");
      throw new ApiError(404, "NOT_FOUND", "no such resource");
    },
  };
}

export const looksLikeJwt = (token: string) => JWT_SHAPE.test(token);

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | null): string | undefined {
  if (header === null || header.length > MAX_JWT_LENGTH + 16) return undefined;
  const token = BEARER.exec(header)?.[1];
  if (token === undefined) return undefined;
  return token.length <= MAX_TOKEN_LENGTH || looksLikeJwt(token) ? token : undefined;
}

const ANONYMOUS: Caller = { name: "", scopes: new Set<Scope>(["read", "write"]) };

/**
 * The caller a bearer token stands for, or why it is refused: the API's edge and the console's sign-in both ask here.
 * A static token answers at once; a JWT (when an issuer is configured) once its signature and claims are checked.
 */
export function verifyToken(settings: AuthSettings, token: string): Caller | Refusal | Promise<Caller | Refusal> {
  if (settings.jwt && looksLikeJwt(token)) return settings.jwt(token);
  const entry = findTokenEntry(settings.tokens, token);
  return entry ? { name: entry.name, scopes: entry.scopes } : { refused: "unknown_token" };
}

/** The caller's issuer's name for `scope` (a JWT's OAuth scope), when it has one. */
const scopeNameOf = (caller: Caller, scope: Scope) =>
  caller.scopeNames ? { scopeName: caller.scopeNames[scope] } : {};

/** Throws the refusal's HTTP error (told to onRefusal first), or returns the caller when it has the access needed. */
function admit(settings: AuthSettings, verdict: Caller | Refusal, access: Exclude<Access, "open">): Caller {
  const refusal: Refusal | undefined =
    "refused" in verdict
      ? verdict
      : access !== "authenticated" && !verdict.scopes.has(access)
        ? { refused: "insufficient_scope", scope: access, caller: verdict.name, ...scopeNameOf(verdict, access) }
        : undefined;
  if (refusal === undefined) return verdict as Caller;
  settings.onRefusal?.(refusal);
  throw refusalError(refusal);
}

/**
 * The caller of a request, or undefined when it needs no token; throws 401 for a missing, unknown or invalid token,
 * 403 for a valid token without the scope the request needs, and 503 when an issuer's keys were never fetched.
 * Without an issuer the answer is synchronous, as it always was.
 */
export function authenticate(
  settings: AuthSettings & { jwt?: undefined },
  access: Access,
  authorization: string | null,
): Caller | undefined;
export function authenticate(
  settings: AuthSettings,
  access: Access,
  authorization: string | null,
): Caller | undefined | Promise<Caller>;
export function authenticate(
  settings: AuthSettings,
  access: Access,
  authorization: string | null,
): Caller | undefined | Promise<Caller> {
  if (access === "open") return undefined;
  if (settings.disabled) return ANONYMOUS;
  const token = bearerToken(authorization);
  const verdict = token === undefined ? ({ refused: "missing" } as const) : verifyToken(settings, token);
  return verdict instanceof Promise
    ? verdict.then((v) => admit(settings, v, access))
    : admit(settings, verdict, access);
}

/** The name of a caller `authenticate` accepted; none recorded means the request was never authenticated (401). */
export function callerName(caller: Caller | undefined): string {
  if (!caller) throw refusalError({ refused: "missing" });
  return caller.name;
}
