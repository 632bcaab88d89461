// JWT access tokens of an OpenID Connect issuer (RFC 9068 profile, and Keycloak's): the checks a token must pass, and
// the caller and scopes it stands for. Each failed check is a refusal reason of its own (auth/refusal.ts).
import { errors, type JWTPayload, jwtVerify, type ProtectedHeaderParameters } from "jose";
import { type KeySource, KeysUnavailable } from "./jwks.ts";
import type { JwtSettings, JwtTrust } from "./jwt-config.ts";
import type { Refusal } from "./refusal.ts";
import type { Caller, Scope } from "./tokens.ts";

/**
 * Asymmetric signatures only. `none` and HMAC are never accepted: with HMAC, anyone holding the issuer's public key
 * could sign a token with it as the secret (algorithm confusion).
 */
export const JWT_ALGORITHMS = ["RS256", "PS256", "ES256", "EdDSA"];
/** Seconds of clock difference with the issuer tolerated on `exp`, `nbf` and `iat`. */
export const CLOCK_TOLERANCE_S = 30;
/** The `typ` header of an access token (RFC 9068), or the plain `JWT` of issuers such as Keycloak. */
const HEADER_TYPES = new Set(["at+jwt", "jwt"]);
/**
 * Static token names are [a-z0-9_-] only, so no name of an issuer's caller, behind this prefix, can ever equal one:
 * idempotency keys, rate limits and the audit keep the two kinds of caller apart.
 */
export const JWT_CALLER_PREFIX = "jwt:";
/** Printable, no white space, at most 255 characters: what a client id or subject is. */
const CALLER_NAME = /^[^\p{C}\s]{1,255}$/u;

/**
 * Verified tokens are remembered until they expire, or until the key set changes (a withdrawn key must stop working):
 * a client reuses its token for its whole life, and checking an RS256 signature costs tens of times the CPU of a
 * static token, several per cent of the CPU of a grant (docs/benchmarks.md). Only tokens
 * that passed every check are kept, so nobody can fill it without the issuer's help; beyond the bound the oldest go.
 */
const REMEMBERED_MAX = 1_000;

/** The caller a JWT stands for, or why it is refused. Never throws for a bad token. */
export type JwtAuthenticator = (token: string) => Promise<Caller | Refusal>;

function refusalOf(error: unknown): Refusal {
  if (error instanceof KeysUnavailable) return { refused: "keys_unavailable" };
  if (error instanceof errors.JOSEAlgNotAllowed) return { refused: "algorithm" };
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
    return { refused: "unknown_key" };
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return { refused: "signature" };
  if (error instanceof errors.JWTExpired) return { refused: "expired" };
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "iss") return { refused: "issuer" };
    if (error.claim === "aud") return { refused: "audience" };
    if (error.claim === "nbf") return { refused: "not_yet_valid" };
    return { refused: "claims" };
  }
  // jose refuses a key that does not fit the header's algorithm with a TypeError; any other JOSE error is a token
  // that is not a well-formed JWS/JWT.
  if (error instanceof errors.JOSEError || error instanceof TypeError) return { refused: "malformed" };
  throw error;
}

/** `typ` in the header (when present) says access token; Keycloak's `typ` claim (when present) says Bearer, not ID. */
function isAccessToken(header: ProtectedHeaderParameters, payload: JWTPayload): boolean {
  if (header.typ !== undefined) {
    const type = header.typ.toLowerCase().replace(/^application\//, "");
    if (!HEADER_TYPES.has(type)) return false;
  }
  return payload.typ === undefined || (typeof payload.typ === "string" && payload.typ.toLowerCase() === "bearer");
}

/** `azp`, else `client_id`, else `sub`: the client the token was issued to before the subject it speaks for. */
function callerNameOf(payload: JWTPayload): string | undefined {
  const claim = ["azp", "client_id", "sub"].find((name) => payload[name] !== undefined);
  return claim === undefined ? undefined : claimText(payload, claim);
}

/**
 * `iat` later than now (beyond the tolerance): the token claims to be issued in the future, which no issuer with a
 * sane clock does; jose checks `iat` only against a maximum age, which we do not set.
 */
function issuedInFuture(payload: JWTPayload, nowMs: number): boolean {
  return typeof payload.iat === "number" && payload.iat > nowMs / 1000 + CLOCK_TOLERANCE_S;
}

/** OAuth scopes from `scope` (space separated) and `scp` (a string or an array), mapped to ours. */
export function scopesOf(payload: JWTPayload, settings: Pick<JwtSettings, "readScope" | "writeScope">): Set<Scope> {
  const granted = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === "string") for (const s of value.split(" ")) if (s) granted.add(s);
  };
  add(payload.scope);
  if (Array.isArray(payload.scp)) payload.scp.forEach(add);
  else add(payload.scp);
  const scopes = new Set<Scope>();
  if (granted.has(settings.readScope)) scopes.add("read");
  if (granted.has(settings.writeScope)) scopes.add("write");
  return scopes;
}

type Remembered<T> = { identity: T; generation: number };

/**
 * A token's checks, then `identify`, which says whom the payload stands for (undefined: refused as `no_caller`); the
 * identity carries `expiresAtMs`, the token's exp. Each use of JWTs (Entitlement's callers, Notification's players)
 * is this with its own `identify`.
 */
export function createJwtCheck<T extends { expiresAtMs: number }>(
  trust: JwtTrust,
  keys: KeySource,
  identify: (payload: JWTPayload, expiresAtMs: number) => T | undefined,
  wallClock: () => number = Date.now,
): (token: string) => Promise<T | Refusal> {
  const remembered = new Map<string, Remembered<T>>();
  const options = {
    algorithms: JWT_ALGORITHMS,
    issuer: trust.issuer,
    audience: trust.audience,
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: ["exp"],
  };
  return async (token) => {
    const known = remembered.get(token);
    keys.refreshIfStale();
    if (known && known.generation === keys.generation() && wallClock() < known.identity.expiresAtMs) {
      return known.identity;
    }
    if (known) remembered.delete(token);
    let verified: Awaited<ReturnType<typeof jwtVerify>>;
    try {
      verified = await jwtVerify(token, keys.key, { ...options, currentDate: new Date(wallClock()) });
    } catch (error) {
      return refusalOf(error);
    }
    const { protectedHeader, payload } = verified;
    if (issuedInFuture(payload, wallClock())) return { refused: "not_yet_valid" };
    if (!isAccessToken(protectedHeader, payload)) return { refused: "type" };
    // exp is required, so it is a number here; no tolerance is added, so a remembered token ends no later than its exp.
    const identity = identify(payload, Number(payload.exp) * 1000);
    if (identity === undefined) return { refused: "no_caller" };
    if (remembered.size >= REMEMBERED_MAX) remembered.delete(remembered.keys().next().value as string);
    remembered.set(token, { identity, generation: keys.generation() });
    return identity;
  };
}

/** Entitlement's callers: the client the token was issued to, with the scopes it grants. */
export function createJwtAuthenticator(
  settings: JwtSettings,
  keys: KeySource,
  wallClock: () => number = Date.now,
): JwtAuthenticator {
  const scopeNames = { read: settings.readScope, write: settings.writeScope };
  const identify = (payload: JWTPayload, expiresAtMs: number) => {
    const name = callerNameOf(payload);
    if (name === undefined) return undefined;
    return {
      name: `${JWT_CALLER_PREFIX}${name}`,
      scopes: scopesOf(payload, settings),
      expiresAtMs,
      scopeNames,
    };
  };
  return createJwtCheck(settings, keys, identify, wallClock);
}

/** The value of `claim` when it is a printable string of at most 255 characters (an id such as `sub`). */
export function claimText(payload: JWTPayload, claim: string): string | undefined {
  const value = payload[claim];
  return typeof value === "string" && CALLER_NAME.test(value) ? value : undefined;
}
