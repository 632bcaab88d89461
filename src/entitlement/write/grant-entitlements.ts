// A grant of one item or of a bundle's items: one call of `entitlement_status_change` (db/entitlement/functions/), its
// own transaction: the key's lock and live record, the upsert of every item not ACTIVE with its audit row, outbox
// event and expiry row, and the facts of the answer remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeArgs } from "./change-params.ts";
import { type CommandOutcome, callCommand } from "./idempotency-params.ts";

export type Grant = KeyedChange & {
  /** The items in the request's order: one, or a bundle's. */
  skus: string[];
  /** A bundle's grant, never refused: its reply lists every item, changed or not. */
  bundle: boolean;
  /** The items' expiry, or null. */
  expiresAt: Date | null;
};

/**
 * The facts: each item of the request with its version, updated_at and whether this grant changed it, or, when the
 * one item of a grant that is not a bundle was already ACTIVE, `{kind: "unchanged"}`.
 */
export const grantEntitlements = (db: Db, g: Grant): Promise<CommandOutcome> =>
  callCommand(
    db,
    "entitlement_status_change",
    [
      ["p_action", "text", "GRANT"],
      ...keyedChangeArgs("GRANT", g),
      ["p_skus", "text[]", g.skus],
      ["p_bundle", "boolean", g.bundle],
      ["p_expires_at", "timestamptz", g.expiresAt],
    ],
    g.idempotency,
  );
