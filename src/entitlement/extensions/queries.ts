// SQL of an extension, handle first: moving an ACTIVE entitlement's expires_at later.
import type { Db } from "../../shared/db.ts";
import type { EntitlementDetailRow } from "../entitlements/queries.ts";

export type Extension = {
  userId: string;
  sku: string;
  expiresAt: Date;
  reason: string;
  purchaseId: string;
  now: Date;
  /** As for grants: change nothing when this caller's key has a live record (a replay), so it can be pipelined. */
  unlessKeyIsLive: { caller: string; key: string };
};

/**
 * Moves expires_at to `expiresAt` when the entitlement is ACTIVE and expires before it (version + 1). An entitlement
 * without expiry never expires, so no date is later: it is refused like an earlier one. No row → refused.
 */
export async function extendIfLater(db: Db, x: Extension): Promise<EntitlementDetailRow | undefined> {
  const k = x.unlessKeyIsLive;
  const [row] = await db<EntitlementDetailRow[]>`
    update entitlements
    set expires_at = ${x.expiresAt}, version = version + 1, updated_at = ${x.now}, source = ${x.reason},
        source_id = ${x.purchaseId}
    where user_id = ${x.userId} and stock_keeping_unit = ${x.sku} and status = 'ACTIVE' and expires_at < ${x.expiresAt}
      and not exists (select 1 from idempotency_keys
                      where caller = ${k.caller} and idem_key = ${k.key} and expires_at > now())
    returning user_id, stock_keeping_unit, status, version::float8 as version, updated_at, expires_at`;
  return row;
}
