// A grant of one item or of a bundle's items: one call of `entitlement_grant` (db/entitlement/functions/), its own
// transaction: the key's lock and live record, the upsert of every item not ACTIVE with its audit row, outbox event
// and expiry row, and the reply remembered under the key.
import type { Db } from "../../shared/db.ts";
import { type KeyedChange, keyedChangeParams } from "./change-params.ts";
import { type CommandOutcome, OUTCOME_COLUMNS, type StoredReply } from "./idempotency-params.ts";

export type Grant = KeyedChange & {
  /** The items in the request's order: one, or a bundle's. */
  skus: string[];
  /** The items' expiry, or null. */
  expiresAt: Date | null;
  /**
   * The reply of the grant. A body that lists `items` (a bundle) gets each item's version, updated_at and changed
   * from the database; any other body gets the one item's new version.
   */
  applied: StoredReply;
  /** The reply when the one item is already ACTIVE; null for a bundle, whose reply lists every item instead. */
  refused: StoredReply | null;
};

export async function grantEntitlements(db: Db, g: Grant): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_grant(
      ${keyedChangeParams(db, "GRANT", g)},
      p_skus => ${g.skus}::text[],
      p_expires_at => ${g.expiresAt}::timestamptz,
      p_applied => ${db.json(g.applied)}::jsonb,
      p_refused => ${g.refused === null ? null : db.json(g.refused)}::jsonb,
      p_key_scope => ${g.idempotency.scope ?? null}::text)`;
  if (!row) throw new Error("entitlement_grant returned no row");
  return row;
}
