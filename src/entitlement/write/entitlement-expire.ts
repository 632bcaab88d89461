// The scheduler's expiry of one claimed item: one call of `entitlement_expire` (db/entitlement/functions/), inside the
// scheduler's transaction: the expiry DONE under its claim and, when the entitlement is still ACTIVE with an expiry
// that has passed, its revoke with the EXPIRE audit row and the EntitlementRevoked event.
import type { Db } from "../../shared/db.ts";
import { type ChangeFields, changeArgs } from "./change-params.ts";
import { callFunction } from "./function-call.ts";

export type Expiry = ChangeFields & { sku: string; lockedBy: string };

/** `lost`: the claim was lost, nothing done; `unchanged`: a revoke, re-grant or extension made it moot. */
export type ExpiryOutcome = "applied" | "unchanged" | "lost";

export async function expireEntitlement(db: Db, x: Expiry): Promise<ExpiryOutcome> {
  const [row] = await callFunction<{ outcome: ExpiryOutcome }[]>(db, "select entitlement_expire($args) as outcome", [
    ...changeArgs("EXPIRE", x),
    ["p_sku", "text", x.sku],
    ["p_locked_by", "text", x.lockedBy],
  ]);
  if (!row) throw new Error("entitlement_expire returned no row");
  return row.outcome;
}
