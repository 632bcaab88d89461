// The console's undo of an extension: one call of `entitlement_extend_undo` (db/entitlement/functions/), its own
// transaction: the key's lock and live record, the expiry the extension replaced set back on the item while it is
// still at the version the extension left, with its audit row (EXTEND), outbox event and rescheduled expiry, and the
// reply remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeParams } from "./change-params.ts";
import { type CommandOutcome, OUTCOME_COLUMNS, type StoredReply } from "./idempotency-params.ts";

/** Why the undo is refused: the item changed since the extension, or its expiry is not later than the one to restore. */
export type ExtensionUndoRefusals = { changed: StoredReply; not_earlier: StoredReply };

export type ExtensionUndo = KeyedChange & {
  sku: string;
  /** The expiry the extension replaced. */
  expiresAt: Date;
  /** The version the extension left. */
  version: number;
  /** The reply of the undo; the function sets its version. */
  applied: StoredReply;
  refused: ExtensionUndoRefusals;
};

export async function undoExtension(db: Db, x: ExtensionUndo): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_extend_undo(
      ${keyedChangeParams(db, "EXTEND", x)},
      p_sku => ${x.sku}::text,
      p_expires_at => ${x.expiresAt}::timestamptz,
      p_version => ${x.version}::bigint,
      p_applied => ${db.json(x.applied)}::jsonb,
      p_refused => ${db.json(x.refused)}::jsonb)`;
  if (!row) throw new Error("entitlement_extend_undo returned no row");
  return row;
}
