// An extension: one call of `extend_entitlement` (db/entitlement/functions/), its own transaction: the key's lock and
// live record, the later expiry set on an ACTIVE item with its audit row, outbox event and rescheduled expiry, and the
// facts of the answer remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeArgs } from "./change-params.ts";
import type { Arg } from "./function-call.ts";
import { type CommandOutcome, callCommand } from "./idempotency-params.ts";

export type Extension = KeyedChange & {
  sku: string;
  /** The later expiry. */
  expiresAt: Date;
};

/** The facts: the item's version and updated_at, or why not (not_active, no_expiry, not_later with the expiry). */
export const extendEntitlement = (db: Db, x: Extension): Promise<CommandOutcome> =>
  callCommand(db, "extend_entitlement", expiryArgs(x), x.idempotency);

/** The arguments an extension and its undo share: the change, the item and the expiry it gets. */
export const expiryArgs = (x: Extension): Arg[] => [
  ...keyedChangeArgs("EXTEND", x),
  ["p_sku", "text", x.sku],
  ["p_expires_at", "timestamptz", x.expiresAt],
];
