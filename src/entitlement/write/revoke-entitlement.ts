// A revoke: one call of `entitlement_status_change` (db/entitlement/functions/), as a grant's, its own transaction: the
// key's lock and live record, the item REVOKED unless it is, with its audit row and outbox event, and the facts of
// the answer remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeArgs } from "./change-params.ts";
import { type CommandOutcome, callCommand } from "./idempotency-params.ts";

export type Revoke = KeyedChange & { sku: string };

/** The facts: the item's version and updated_at, or `{kind: "unchanged"}` when it was already REVOKED. */
export const revokeEntitlement = (db: Db, r: Revoke): Promise<CommandOutcome> =>
  callCommand(
    db,
    "entitlement_status_change",
    [
      ["p_action", "text", "REVOKE"],
      ...keyedChangeArgs("REVOKE", r),
      ["p_skus", "text[]", [r.sku]],
      ["p_bundle", "boolean", false],
      ["p_expires_at", "timestamptz", null],
    ],
    r.idempotency,
  );
