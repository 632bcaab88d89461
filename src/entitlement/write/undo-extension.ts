// The console's undo of an extension: one call of `undo_extension` (db/entitlement/functions/), its own transaction:
// the key's lock and live record, the expiry the extension replaced set back on the item while it is still at the
// version the extension left, with its audit row (EXTEND), outbox event and rescheduled expiry, and the facts of the
// answer remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeParams } from "./change-params.ts";
import { type CommandOutcome, OUTCOME_COLUMNS } from "./idempotency-params.ts";

export type ExtensionUndo = KeyedChange & {
  sku: string;
  /** The expiry the extension replaced. */
  expiresAt: Date;
  /** The version the extension left. */
  version: number;
};

/** The facts: the item's version and updated_at, or why not (changed_since the extension, not_earlier). */
export async function undoExtension(db: Db, x: ExtensionUndo): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from undo_extension(
      ${keyedChangeParams(db, "EXTEND", x)},
      p_sku => ${x.sku}::text,
      p_expires_at => ${x.expiresAt}::timestamptz,
      p_version => ${x.version}::bigint)`;
  if (!row) throw new Error("undo_extension returned no row");
  return row;
}
