// An extension: one call of `extend_entitlement` (db/entitlement/functions/), its own transaction: the key's lock and
// live record, the later expiry set on an ACTIVE item with its audit row, outbox event and rescheduled expiry, and the
// facts of the answer remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeParams } from "./change-params.ts";
import { type CommandOutcome, OUTCOME_COLUMNS } from "./idempotency-params.ts";

export type Extension = KeyedChange & {
  sku: string;
  /** The later expiry. */
  expiresAt: Date;
};

/** The facts: the item's version and updated_at, or why not (not_active, no_expiry, not_later with the expiry). */
export async function extendEntitlement(db: Db, x: Extension): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from extend_entitlement(
      ${keyedChangeParams(db, "EXTEND", x)},
      p_sku => ${x.sku}::text,
      p_expires_at => ${x.expiresAt}::timestamptz)`;
  if (!row) throw new Error("extend_entitlement returned no row");
  return row;
}
