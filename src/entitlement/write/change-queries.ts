// Every change of entitlement state is one call of `entitlement_change` (db/entitlement/011_one_write_path.sql): a
// grant, a revoke, a bundle grant, an extension and the scheduler's expiry. The function locks the key, finds its
// live record, changes the items, writes their audit rows, outbox events and expiry rows and the idempotency record:
// one statement and one round trip, its own transaction unless the caller holds one (the scheduler's batch).
import type { JSONValue } from "postgres";
import type { Db } from "../../shared/db.ts";
import { type ChangeAction, EVENT_TYPE } from "./change-action.ts";
import { type CommandOutcome, type IdempotencyArgs, idempotencyParams, OUTCOME_COLUMNS } from "./run.ts";

export type EntitlementChange = {
  action: ChangeAction;
  userId: string;
  /** The items, in the request's order: one, or a bundle's. */
  skus: string[];
  /** Reply with every item (a bundle grant) rather than with `reply`. */
  bundle: boolean;
  /** The entitlement's new source (the request's reason; 'expiry' for the scheduler). */
  reason: string;
  /** Its new source_id; null keeps the row's (the scheduler's expiry). */
  purchaseId: string | null;
  /** A grant's expiry (null for none); an extension's later expiry. */
  expiresAt: Date | null;
  now: Date;
  traceId: string;
  traceparent: string | null;
  /** The event's payload; the function sets event_id, stock_keeping_unit, source_id and version per item. */
  payload: JSONValue;
  /** The audit detail; the function sets stock_keeping_unit per item. */
  detail: JSONValue;
  /** The 200 body of one item, its version set by the function; null for a bundle (the function builds it). */
  reply: JSONValue | null;
  /** Null for the scheduler's expiry, which has no idempotency record. */
  idempotency: IdempotencyArgs | null;
  /** The scheduler's expiry: its claim, which guards the finalize. */
  lockedBy?: string;
};

export async function changeEntitlements(db: Db, c: EntitlementChange): Promise<CommandOutcome> {
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_change(
      p_action => ${c.action}::text,
      p_user_id => ${c.userId}::text,
      p_skus => ${c.skus}::text[],
      p_bundle => ${c.bundle}::boolean,
      p_reason => ${c.reason}::text,
      p_purchase_id => ${c.purchaseId}::text,
      p_expires_at => ${c.expiresAt}::timestamptz,
      p_now => ${c.now}::timestamptz,
      p_trace_id => ${c.traceId}::text,
      p_traceparent => ${c.traceparent}::text,
      p_event_type => ${EVENT_TYPE[c.action]}::text,
      p_payload => ${db.json(c.payload)}::jsonb,
      p_detail => ${db.json(c.detail)}::jsonb,
      p_reply => ${c.reply === null ? null : db.json(c.reply)}::jsonb,
      ${idempotencyParams(db, c.idempotency)},
      p_locked_by => ${c.lockedBy ?? null}::text)`;
  if (!row) throw new Error("entitlement_change returned no row");
  return row;
}
