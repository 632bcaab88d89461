// The debug token (NOTIFICATION_DEBUG_API_TOKEN): the debug inbox's bearer and the console's sign-in.
import { createHash, timingSafeEqual } from "node:crypto";
import { ApiError } from "../../shared/http/errors.ts";

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Throws 401 unless `Authorization: Bearer <token>` carries the token; compares digests in constant time. */
export function requireBearer(header: string | null, token: string | undefined): void {
  if (!token) return;
  const given = /^Bearer +(\S+) *$/i.exec(header ?? "")?.[1];
  if (given && timingSafeEqual(digest(given), digest(token))) return;
  throw new ApiError(401, "UNAUTHORIZED", "a valid bearer token is required", { "www-authenticate": "Bearer" });
}
