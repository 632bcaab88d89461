// The variables of JWT access tokens from an OpenID Connect issuer, spread into EntitlementEnv (config.ts): their
// descriptions generate docs/configuration.md. Unset issuer: the JWT path is off and only static tokens are accepted.
import { type Static, Type } from "@sinclair/typebox";
import { Duration, Optional, type Rule, Str } from "../config.ts";

/** An OAuth scope-token (RFC 6749): printable ASCII without `"` or a backslash, so a 403 challenge can quote it as it is. */
const SCOPE_NAME = "^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$";

export const JwtEnv = {
  ENTITLEMENT_AUTH_JWT_ISSUER: Optional({
    description:
      "Issuer URL of an OpenID Connect provider (e.g. https://idp.example.com/realms/acme): its JWT access tokens " +
      "are accepted next to the static tokens. https, or http on a loopback host only; compared exactly with `iss`.",
  }),
  ENTITLEMENT_AUTH_JWT_AUDIENCE: Optional({
    description: "The audience a JWT access token must name in `aud` (required with the issuer).",
  }),
  ENTITLEMENT_AUTH_JWT_JWKS_URL: Optional({
    description:
      "Where the issuer's signing keys (JWKS) are fetched. Unset: the `jwks_uri` of the issuer's " +
      "/.well-known/openid-configuration. https, or http on a loopback host only.",
  }),
  ENTITLEMENT_AUTH_JWT_JWKS_COOLDOWN: Duration("30s", {
    minimum: 1_000,
    description:
      "Least time between two JWKS fetches: a token signed with an unknown key id refetches at most this often; " +
      "while the issuer is unreachable the last good keys stay in use.",
  }),
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

const JwtSchema = Type.Object(JwtEnv);
type JwtKeys = Static<typeof JwtSchema>;

/** What the JWT path needs, from the variables above. */
export type JwtSettings = {
  issuer: string;
  audience: string;
  /** Undefined: found through the issuer's discovery document. */
  jwksUrl: string | undefined;
  cooldownMs: number;
  readScope: string;
  writeScope: string;
};

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

const urlRule =
  (name: "ENTITLEMENT_AUTH_JWT_ISSUER" | "ENTITLEMENT_AUTH_JWT_JWKS_URL"): Rule<JwtKeys> =>
  (e) => {
    const value = e[name];
    if (value === undefined || isTrustedUrl(value)) return undefined;
    return `${name} must be an https URL (http only on a loopback host such as 127.0.0.1)`;
  };

const issuerAndAudience: Rule<JwtKeys> = (e) => {
  const issuer = e.ENTITLEMENT_AUTH_JWT_ISSUER !== undefined;
  if (issuer && e.ENTITLEMENT_AUTH_JWT_AUDIENCE === undefined) {
    return "ENTITLEMENT_AUTH_JWT_AUDIENCE is required when ENTITLEMENT_AUTH_JWT_ISSUER is set: without it a token the issuer made for any other service would be accepted";
  }
  const orphans = (["ENTITLEMENT_AUTH_JWT_AUDIENCE", "ENTITLEMENT_AUTH_JWT_JWKS_URL"] as const).filter(
    (name) => !issuer && e[name] !== undefined,
  );
  return orphans.map((name) => `${name} is set but ENTITLEMENT_AUTH_JWT_ISSUER is not: set the issuer too`);
};

export const jwtRules = [
  urlRule("ENTITLEMENT_AUTH_JWT_ISSUER"),
  urlRule("ENTITLEMENT_AUTH_JWT_JWKS_URL"),
  issuerAndAudience,
];

export function jwtSettings(e: JwtKeys): JwtSettings | undefined {
  if (e.ENTITLEMENT_AUTH_JWT_ISSUER === undefined || e.ENTITLEMENT_AUTH_JWT_AUDIENCE === undefined) return undefined;
  return {
    issuer: e.ENTITLEMENT_AUTH_JWT_ISSUER,
    audience: e.ENTITLEMENT_AUTH_JWT_AUDIENCE,
    jwksUrl: e.ENTITLEMENT_AUTH_JWT_JWKS_URL,
    cooldownMs: e.ENTITLEMENT_AUTH_JWT_JWKS_COOLDOWN,
    readScope: e.ENTITLEMENT_AUTH_JWT_READ_SCOPE,
    writeScope: e.ENTITLEMENT_AUTH_JWT_WRITE_SCOPE,
  };
}
