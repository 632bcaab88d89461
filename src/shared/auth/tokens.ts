// Static bearer tokens (docs/security.md): Entitlement's API and Notification's admin API. Configuration holds only
// SHA-256 digests, `name:sha256hex:scopes` entries; a presented token is hashed and compared with every digest in
// constant time.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** `notify` is Notification's alone: sending notifications to players (its admin API has read and write). */
export type Scope = "read" | "write" | "notify";
export type TokenEntry = { name: string; digest: Buffer; scopes: ReadonlySet<Scope> };

export const TOKEN_NAME = /^[a-z0-9_-]{1,64}$/;
export const TOKEN_PREFIX = "ent_";
/** Entitlement's scopes; a service with more passes its own list. */
export const API_SCOPES: readonly Scope[] = ["read", "write"];
const HEX_DIGEST = /^[0-9a-fA-F]{64}$/;

export function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/**
 * One scope of `allowed` or several joined by `+` (`read+write`, `read+write+notify`), each once; undefined for
 * anything else.
 */
export function parseScopes(text: string, allowed: readonly Scope[] = API_SCOPES): Scope[] | undefined {
  const parts = text.split("+");
  const known = parts.every((p) => (allowed as readonly string[]).includes(p));
  return known && new Set(parts).size === parts.length ? (parts as Scope[]) : undefined;
}

/** What a scopes field may be, for a refusal: "read, write or read+write". */
export function scopesRule(allowed: readonly Scope[] = API_SCOPES): string {
  const each = allowed.join(", ");
  return allowed.length === 2
    ? `${allowed[0]}, ${allowed[1]} or ${allowed.join("+")}`
    : `${each}, or several joined by + (${allowed.join("+")})`;
}

/** A fresh token: 32 random bytes, base64url, behind a prefix that makes it recognisable in a leak scan. */
export function newToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
}

/** The configuration entry of a token. */
export function tokenEntryLine(name: string, token: string, scopes: string): string {
  return `${name}:${sha256(token).toString("hex")}:${scopes}`;
}

/**
 * Parses `name:sha256hex:scopes,...`, the value of `variable` (named in the problems). Every bad entry is reported by
 * position (and name when valid); the digest field is never echoed, since a token pasted there by mistake must not
 * reach a log. One name may hold several digests (rotation); one digest may not belong to two names.
 */
export function parseTokenEntries(
  text: string,
  variable = "ENTITLEMENT_AUTH_TOKENS",
  allowed: readonly Scope[] = API_SCOPES,
): { entries: TokenEntry[]; problems: string[] } {
  const entries: TokenEntry[] = [];
  const problems: string[] = [];
  const seen = new Map<string, number>();
  if (text.trim() === "") return { entries, problems };
  text.split(",").forEach((raw, index) => {
    const position = index + 1;
    const before = problems.length;
    const parts = raw.trim().split(":");
    if (parts.length !== 3) {
      problems.push(`${variable} entry ${position}: expected name:sha256hex:scopes (3 fields separated by ':')`);
      return;
    }
    const [name = "", digest = "", scopes = ""] = parts.map((p) => p.trim());
    const label = TOKEN_NAME.test(name) ? `entry ${position} (${name})` : `entry ${position}`;
    const fail = (what: string) => problems.push(`${variable} ${label}: ${what}`);
    if (!TOKEN_NAME.test(name)) fail("the name must be 1 to 64 characters of a-z, 0-9, _ and -");
    if (!HEX_DIGEST.test(digest)) {
      fail("the digest must be 64 hex characters, the SHA-256 of the token (never the token itself)");
    }
    const parsed = parseScopes(scopes, allowed);
    if (!parsed) fail(`scopes must be ${scopesRule(allowed)}`);
    const hex = digest.toLowerCase();
    const earlier = seen.get(hex);
    if (earlier !== undefined) fail(`the same digest as entry ${earlier}: a token belongs to one name`);
    seen.set(hex, position);
    if (problems.length === before && parsed) {
      entries.push({ name, digest: Buffer.from(hex, "hex"), scopes: new Set(parsed) });
    }
  });
  return { entries: problems.length === 0 ? entries : [], problems };
}

/**
 * The entry whose digest is SHA-256(token), or undefined. Every digest is compared, whatever matched before, so the
 * time taken does not tell which entry (or whether any) matched.
 */
export function findTokenEntry(entries: readonly TokenEntry[], token: string): TokenEntry | undefined {
  const presented = sha256(token);
  let found: TokenEntry | undefined;
  for (const entry of entries) {
    const match = timingSafeEqual(presented, entry.digest);
    if (match && found === undefined) found = entry;
  }
  return found;
}

/**
 * An authenticated caller: the token name ('' when authentication is disabled) and what it may do; `expiresAtMs`
 * (epoch ms) when the credential ends by itself (a JWT's exp); `scopeNames` when its issuer names our scopes otherwise
 * (a JWT's OAuth scopes), so that a 403 tells the client which scope to ask its issuer for.
 */
export type Caller = {
  name: string;
  scopes: ReadonlySet<Scope>;
  expiresAtMs?: number;
  scopeNames?: Readonly<Partial<Record<Scope, string>>>;
};
