// A grant or revoke as one call of `entitlement_command` (db/entitlement/009_entitlement_command.sql): the lock, the
// lookup and everything that commits with the change, one statement and one round trip, its own transaction.
import type { JSONValue } from "postgres";
import type { Db } from "../../shared/db.ts";
import type { Action } from "./model.ts";
import type { OutboxEvent } from "./queries.ts";

export type CommandCall = {
  action: Action;
  caller: string;
  key: string;
  /** idempotency/lock-key.ts of the key. */
  lockKey: bigint;
  requestHash: string;
  userId: string;
  sku: string;
  reason: string;
  purchaseId: string;
  /** A grant's expiry; null for none (and for a revoke). */
  expiresAt: Date | null;
  now: Date;
  /** When the idempotency record stops being live. */
  recordExpiresAt: Date;
  /** Bounds each lock wait of the call (lock_timeout; SQLSTATE 55P03 when exceeded). */
  lockTimeoutMs: number;
  auditId: string;
  detail: JSONValue;
  traceId: string;
  /** The event; the function sets the payload's version to the one the upsert produced. */
  event: OutboxEvent;
  /** The 200 body, its version set by the function as in the payload; and the 409 body of a refused transition. */
  applied: JSONValue;
  conflict: JSONValue;
};

/**
 * What the call did: `stored` found a live record (replay or key conflict; nothing written), `past` found the
 * grant's expiry not ahead (nothing written), `state_conflict` and `applied` stored their reply (`reply`).
 */
export type CommandOutcome = {
  outcome: "stored" | "past" | "state_conflict" | "applied";
  storedHash: string | null;
  replyCode: number | null;
  replyBody: unknown;
  replyExpiresAt: Date | null;
};

export async function runEntitlementCommand(db: Db, c: CommandCall): Promise<CommandOutcome> {
  const e = c.event;
  const [row] = await db<CommandOutcome[]>`
    select outcome, stored_hash as "storedHash", reply_code as "replyCode", reply_body as "replyBody",
           reply_expires_at as "replyExpiresAt"
    from entitlement_command(
      p_action => ${c.action}::text,
      p_caller => ${c.caller}::text,
      p_idem_key => ${c.key}::text,
      p_lock_key => ${c.lockKey.toString()}::bigint,
      p_request_hash => ${c.requestHash}::text,
      p_user_id => ${c.userId}::text,
      p_sku => ${c.sku}::text,
      p_reason => ${c.reason}::text,
      p_purchase_id => ${c.purchaseId}::text,
      p_expires_at => ${c.expiresAt}::timestamptz,
      p_now => ${c.now}::timestamptz,
      p_record_expires_at => ${c.recordExpiresAt}::timestamptz,
      p_lock_timeout_ms => ${c.lockTimeoutMs}::int,
      p_audit_id => ${c.auditId}::uuid,
      p_detail => ${db.json(c.detail)}::jsonb,
      p_trace_id => ${c.traceId}::text,
      p_event_id => ${e.eventId}::uuid,
      p_event_type => ${e.eventType}::text,
      p_aggregate_key => ${e.aggregateKey}::text,
      p_payload => ${db.json(e.payload)}::jsonb,
      p_traceparent => ${e.traceparent}::text,
      p_applied => ${db.json(c.applied)}::jsonb,
      p_conflict => ${db.json(c.conflict)}::jsonb)`;
  if (!row) throw new Error("entitlement_command returned no row");
  return row;
}
