// The console's cookies: HttpOnly (no script reads them), SameSite=Strict (no other site's page or link sends them),
// Path=/console, and Secure whenever the browser reached the service over TLS.
import { createHash, timingSafeEqual } from "node:crypto";

/** The value of cookie `name` in a Cookie header, or undefined. */
export function readCookie(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Whether the browser talks TLS to us: the request itself is https, the configuration says so (a proxy that
 * terminates TLS), or the proxy's X-Forwarded-Proto says https. Trusting that header unchecked is safe in this one
 * direction: a forged `https` only adds Secure, which makes a browser on plain http drop the cookie, harming only the
 * forger; its absence never removes Secure that the configuration asks for.
 */
export function isSecureRequest(request: Request, alwaysSecure: boolean): boolean {
  if (alwaysSecure || new URL(request.url).protocol === "https:") return true;
  const forwarded = request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase();
  return forwarded === "https";
}

/** A Set-Cookie value; `value` undefined clears the cookie. Session cookies only: the server decides when they end. */
export function cookie(name: string, value: string | undefined, secure: boolean): string {
  const parts = [`${name}=${value ?? ""}`, "Path=/console", "HttpOnly", "SameSite=Strict"];
  if (secure) parts.push("Secure");
  if (value === undefined) parts.push("Max-Age=0");
  return parts.join("; ");
}

/** Constant-time comparison of a presented secret with the expected one (a missing one never matches). */
export function sameSecret(presented: string | null | undefined, expected: string): boolean {
  if (!presented) return false;
  const digest = (value: string) => createHash("sha256").update(value).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
