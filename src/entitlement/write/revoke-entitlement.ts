// A revoke: one call of `revoke_entitlement` (db/entitlement/functions/), its own transaction: the key's lock and live
// record, the item REVOKED unless it is, with its audit row and outbox event, and the facts of the answer remembered
// under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeParams } from "./change-params.ts";
import { type CommandOutcome, OUTCOME_COLUMNS } from "./idempotency-params.ts";

export type Revoke = KeyedChange & { sku: string };

/** The facts: the item's version and updated_at, or `{kind: "unchanged"}` when it was already REVOKED. */
export async function revokeEntitlement(db: Db, r: Revoke): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from revoke_entitlement(
      ${keyedChangeParams(db, "REVOKE", r)},
      p_sku => ${r.sku}::text,
      p_key_scope => ${r.idempotency.scope ?? null}::text)`;
  if (!row) throw new Error("revoke_entitlement returned no row");
  return row;
}
