// A revoke: one call of `entitlement_revoke` (db/entitlement/functions/), its own transaction: the key's lock and live
// record, the item REVOKED unless it is, with its audit row and outbox event, and the reply remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeParams } from "./change-params.ts";
import { type CommandOutcome, OUTCOME_COLUMNS, type StoredReply } from "./idempotency-params.ts";

export type Revoke = KeyedChange & {
  sku: string;
  /** The reply of the revoke; the function sets its version. */
  applied: StoredReply;
  /** The reply when the item is already REVOKED. */
  refused: StoredReply;
};

export async function revokeEntitlement(db: Db, r: Revoke): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_revoke(
      ${keyedChangeParams(db, "REVOKE", r)},
      p_sku => ${r.sku}::text,
      p_applied => ${db.json(r.applied)}::jsonb,
      p_refused => ${db.json(r.refused)}::jsonb,
      p_key_scope => ${r.idempotency.scope ?? null}::text)`;
  if (!row) throw new Error("entitlement_revoke returned no row");
  return row;
}
