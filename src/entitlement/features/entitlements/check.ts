// "Does this user own this item?": the hottest read. One primary-key lookup on the pool (no transaction, no
// idempotency), and the version as a strong ETag so a poller that already has the current state gets a bodiless 304.
import type { Db } from "../../../shared/db.ts";
import { toEntitlementDetail } from "./detail.ts";
import type { EntitlementDetail } from "./model.ts";
import { findEntitlement } from "./queries.ts";

/** The entitlement, or undefined when the pair was never granted nor revoked. */
export async function checkEntitlement(
  db: Db,
  key: { userId: string; sku: string },
): Promise<EntitlementDetail | undefined> {
  const row = await findEntitlement(db, key);
  return row && toEntitlementDetail(row);
}

/** The strong entity tag of a version: every transition increments it, so equal tags mean equal state. */
export const etagOf = (version: number) => `"${version}"`;

/**
 * Whether `If-None-Match` names the current tag (RFC 9110 §13.1.2): a list of tags, `*` for any, and a weak tag
 * compares equal to its strong form (the weak comparison this header calls for).
 */
export function noneMatchHits(header: string | null, etag: string): boolean {
  if (header === null) return false;
  return header.split(",").some((raw) => {
    const tag = raw.trim();
    return tag === "*" || tag === etag || tag === `W/${etag}`;
  });
}
