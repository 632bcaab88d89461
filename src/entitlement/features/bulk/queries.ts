// SQL only the bulk preview reads: the current status of many (user, SKU) pairs at once, by primary key.
import type { Db } from "../../../shared/db.ts";
import type { EntitlementStatus } from "../entitlements/model.ts";

export type PairStatus = { user_id: string; stock_keeping_unit: string; status: EntitlementStatus };

export async function readPairStatuses(
  db: Db,
  pairs: readonly { userId: string; sku: string }[],
): Promise<PairStatus[]> {
  if (pairs.length === 0) return [];
  return db<PairStatus[]>`
    select e.user_id, e.stock_keeping_unit, e.status
    from unnest(${pairs.map((p) => p.userId)}::text[], ${pairs.map((p) => p.sku)}::text[]) as p(user_id, sku)
    join entitlements e on e.user_id = p.user_id and e.stock_keeping_unit = p.sku`;
}
