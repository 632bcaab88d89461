// The variables of JWT access tokens from an OpenID Connect issuer, under a prefix per use (Entitlement's callers:
// ENTITLEMENT_AUTH_JWT; Notification's players: NOTIFICATION_PLAYER_JWT), spread into a service's configuration schema:
// their descriptions generate docs/configuration.md. Unset issuer: that JWT path is off.
import { Duration, Optional, type Rule, Str } from "../config.ts";

/** An OAuth scope-token (RFC 6749): printable ASCII without `"` or a backslash, so a 403 challenge can quote it as it is. */
const SCOPE_NAME = "^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$";

type TrustKey<P extends string> = `${P}_ISSUER` | `${P}_AUDIENCE` | `${P}_JWKS_URL`;
/** The parsed trust variables of one prefix. */
export type JwtTrustValues<P extends string> = Partial<Record<TrustKey<P>, string>> &
  Record<`${P}_JWKS_COOLDOWN`, number>;

/**
 * The issuer, audience, key set and cooldown of one JWT path. `accepted` ends the issuer's description: what its tokens
 * are accepted for.
 */
export function jwtTrustVariables<P extends string>(prefix: P, accepted: string) {
  return {
    [`${prefix}_ISSUER`]: Optional({
      description:
        "Issuer URL of an OpenID Connect provider (e.g. https://idp.example.com/realms/acme): its JWT access tokens " +
        `are accepted ${accepted}. https, or http on a loopback host only; compared exactly with \`iss\`.`,
    }),
    [`${prefix}_AUDIENCE`]: Optional({
      description: "The audience a JWT access token must name in `aud` (required with the issuer).",
    }),
    [`${prefix}_JWKS_URL`]: Optional({
      description:
        "Where the issuer's signing keys (JWKS) are fetched. Unset: the `jwks_uri` of the issuer's " +
        "/.well-known/openid-configuration. https, or http on a loopback host only.",
    }),
    [`${prefix}_JWKS_COOLDOWN`]: Duration("30s", {
      minimum: 1_000,
      description:
        "Least time between two JWKS fetches: a token signed with an unknown key id refetches at most this often; " +
        "while the issuer is unreachable the last good keys stay in use.",
    }),
  } as Record<TrustKey<P>, ReturnType<typeof Optional>> & Record<`${P}_JWKS_COOLDOWN`, ReturnType<typeof Duration>>;
}

export const JwtEnv = {
  ...jwtTrustVariables("ENTITLEMENT_AUTH_JWT", "next to the static tokens"),
  ENTITLEMENT_AUTH_JWT_READ_SCOPE: Str("entitlements.read", {
    minLength: 1,
    pattern: SCOPE_NAME,
    description: "The OAuth scope (in `scope` or `scp`) that grants the read scope.",
  }),
  ENTITLEMENT_AUTH_JWT_WRITE_SCOPE: Str("entitlements.write", {
    minLength: 1,
    pattern: SCOPE_NAME,
    description: "The OAuth scope (in `scope` or `scp`) that grants the write scope.",
  }),
};

type JwtKeys = JwtTrustValues<"ENTITLEMENT_AUTH_JWT"> & {
  ENTITLEMENT_AUTH_JWT_READ_SCOPE: string;
  ENTITLEMENT_AUTH_JWT_WRITE_SCOPE: string;
};

/** Whom to trust: what every JWT path needs, from its variables. */
export type JwtTrust = {
  issuer: string;
  audience: string;
  /** Undefined: found through the issuer's discovery document. */
  jwksUrl: string | undefined;
  cooldownMs: number;
};

/** Entitlement's JWT path: the trust, and the OAuth scopes that map to its read and write scopes. */
export type JwtSettings = JwtTrust & { readScope: string; writeScope: string };

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * https, or plain http to this machine only: keys fetched in the clear from another host could be swapped by anyone on
 * the path, and every token they sign would be accepted.
 */
export function isTrustedUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK.test(url.hostname));
  } catch {
    return false;
  }
}

/** The issuer and key set URLs are trusted ones; the audience comes with the issuer, and nothing without it. */
export function jwtTrustRules<P extends string>(prefix: P): Rule<JwtTrustValues<P>>[] {
  const get = (e: JwtTrustValues<P>, name: string) => (e as Record<string, string | undefined>)[`${prefix}_${name}`];
  const urlRule =
    (name: "ISSUER" | "JWKS_URL"): Rule<JwtTrustValues<P>> =>
    (e) => {
      const value = get(e, name);
      if (value === undefined || isTrustedUrl(value)) return undefined;
      return `${prefix}_${name} must be an https URL (http only on a loopback host such as 127.0.0.1)`;
    };
  const issuerAndAudience: Rule<JwtTrustValues<P>> = (e) => {
    const issuer = get(e, "ISSUER") !== undefined;
    if (issuer && get(e, "AUDIENCE") === undefined) {
      return `${prefix}_AUDIENCE is required when ${prefix}_ISSUER is set: without it a token the issuer made for any other service would be accepted`;
    }
    const orphans = ["AUDIENCE", "JWKS_URL"].filter((name) => !issuer && get(e, name) !== undefined);
    return orphans.map((name) => `${prefix}_${name} is set but ${prefix}_ISSUER is not: set the issuer too`);
  };
  return [urlRule("ISSUER"), urlRule("JWKS_URL"), issuerAndAudience];
}

/** The trust of one prefix, or undefined when its issuer is unset. */
export function jwtTrust<P extends string>(prefix: P, e: JwtTrustValues<P>): JwtTrust | undefined {
  const get = (name: string) => (e as Record<string, string | number | undefined>)[`${prefix}_${name}`];
  const issuer = get("ISSUER");
  const audience = get("AUDIENCE");
  if (typeof issuer !== "string" || typeof audience !== "string") return undefined;
  const jwksUrl = get("JWKS_URL");
  return {
    issuer,
    audience,
    jwksUrl: typeof jwksUrl === "string" ? jwksUrl : undefined,
    cooldownMs: Number(get("JWKS_COOLDOWN")),
  };
}

export const jwtRules = jwtTrustRules("ENTITLEMENT_AUTH_JWT");

export function jwtSettings(e: JwtKeys): JwtSettings | undefined {
  const trust = jwtTrust("ENTITLEMENT_AUTH_JWT", e);
  if (trust === undefined) return undefined;
  return { ...trust, readScope: e.ENTITLEMENT_AUTH_JWT_READ_SCOPE, writeScope: e.ENTITLEMENT_AUTH_JWT_WRITE_SCOPE };
}
