// The reads of entitlements: one, and a user's list, handle first. Every write is one call of a
// function of write/ (entitlement-grant.ts and its siblings).
import type { Db } from "../../../shared/db.ts";
import type { EntitlementStatus } from "./model.ts";

/** `version` is bigint, which postgres.js returns as a string; read as float8 it is a number, exact below 2^53. */
export type EntitlementRow = {
  user_id: string;
  stock_keeping_unit: string;
  status: EntitlementStatus;
  version: number;
  updated_at: Date;
};

export type EntitlementDetailRow = EntitlementRow & { expires_at: Date | null };

/** The current state of one entitlement: a primary-key lookup on the pool, no transaction. */
export async function findEntitlement(
  db: Db,
  key: { userId: string; sku: string },
): Promise<EntitlementDetailRow | undefined> {
  const [row] = await db<EntitlementDetailRow[]>`
    select user_id, stock_keeping_unit, status, version::float8 as version, updated_at, expires_at
    from entitlements
    where user_id = ${key.userId} and stock_keeping_unit = ${key.sku}`;
  return row;
}

/** A listed row and its sort key: updated_at to the microsecond (a JS Date keeps milliseconds only). */
export type ListedRow = EntitlementDetailRow & { updated_key: string };

/**
 * One page of a user's entitlements, newest first, the SKU breaking ties; `after` is the previous page's last key.
 * Keyset paging on entitlements_user_updated_sku_idx: the redundant `updated_at <= t` bounds the index scan, the
 * rest of the predicate skips the ties already listed. Fetches `limit` rows (callers ask one more than they show).
 */
export async function listEntitlementsOfUser(
  db: Db,
  input: { userId: string; limit: number; after?: { updatedAt: string; sku: string } },
): Promise<ListedRow[]> {
  const a = input.after;
  // Sent as text: postgres.js would pass a timestamptz parameter through a JS Date, losing the microseconds.
  const after = a
    ? db`and updated_at <= ${a.updatedAt}::text::timestamptz
         and (updated_at < ${a.updatedAt}::text::timestamptz or stock_keeping_unit > ${a.sku})`
    : db``;
  return db<ListedRow[]>`
    select user_id, stock_keeping_unit, status, version::float8 as version, updated_at, expires_at,
           to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as updated_key
    from entitlements
    where user_id = ${input.userId} ${after}
    order by updated_at desc, stock_keeping_unit
    limit ${input.limit}`;
}
