// The console's undo of an extension: one call of `undo_extension` (db/entitlement/functions/), its own transaction:
// the key's lock and live record, the expiry the extension replaced set back on the item while it is still at the
// version the extension left, with its audit row (EXTEND), outbox event and rescheduled expiry, and the facts of the
// answer remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type Extension, expiryArgs } from "./extend-entitlement.ts";
import { type CommandOutcome, callCommand } from "./idempotency-params.ts";

export type ExtensionUndo = Omit<Extension, "expiresAt"> & {
  /** The expiry the extension replaced. */
  expiresAt: Date;
  /** The version the extension left. */
  version: number;
};

/** The facts: the item's version and updated_at, or why not (changed_since the extension, not_earlier). */
export const undoExtension = (db: Db, x: ExtensionUndo): Promise<CommandOutcome> =>
  callCommand(db, "undo_extension", [...expiryArgs(x), ["p_version", "bigint", x.version]], x.idempotency);
