// An extension: one call of `entitlement_extend` (db/entitlement/functions/), its own transaction: the key's lock and
// live record, the later expiry set on an ACTIVE item with its audit row, outbox event and rescheduled expiry, and the
// reply remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeParams } from "./change-params.ts";
import { type CommandOutcome, OUTCOME_COLUMNS, type StoredReply } from "./idempotency-params.ts";

/** Why an extension is refused; in not_later's message `{expires_at}` stands for the current expiry. */
export type ExtensionRefusals = { not_active: StoredReply; no_expiry: StoredReply; not_later: StoredReply };

export type Extension = KeyedChange & {
  sku: string;
  /** The later expiry. */
  expiresAt: Date;
  /** The reply of the extension; the function sets its version. */
  applied: StoredReply;
  refused: ExtensionRefusals;
};

export async function extendEntitlement(db: Db, x: Extension): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_extend(
      ${keyedChangeParams(db, "EXTEND", x)},
      p_sku => ${x.sku}::text,
      p_expires_at => ${x.expiresAt}::timestamptz,
      p_applied => ${db.json(x.applied)}::jsonb,
      p_refused => ${db.json(x.refused)}::jsonb)`;
  if (!row) throw new Error("entitlement_extend returned no row");
  return row;
}
