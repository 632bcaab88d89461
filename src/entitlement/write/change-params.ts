// The arguments every change of entitlements gives its function, by name: whose items, why, when, the trace and the
// event (its type follows from the action); a command's change adds its purchase and audit detail (and its
// Idempotency-Key, which callCommand passes).
import type { JSONValue } from "postgres";
import type { Db } from "../../shared/db.ts";
import { type ChangeAction, EVENT_TYPE } from "./change-action.ts";
import type { IdempotencyArgs } from "./idempotency-params.ts";

export type ChangeFields = {
  userId: string;
  /** The entitlement's new source (the request's reason; 'expiry' for the scheduler). */
  reason: string;
  now: Date;
  traceId: string;
  traceparent: string | null;
  /** The event's payload; the function sets event_id, stock_keeping_unit, source_id and version per item. */
  payload: JSONValue;
};

/** A change made by a command under its Idempotency-Key: a grant, a revoke or an extension. */
export type KeyedChange = ChangeFields & {
  /** The entitlement's new source_id. */
  purchaseId: string;
  /** The audit detail; the function sets stock_keeping_unit per item. */
  detail: JSONValue;
  idempotency: IdempotencyArgs;
};

export const changeParams = (db: Db, action: ChangeAction, c: ChangeFields) => db`
  p_user_id => ${c.userId}::text,
  p_reason => ${c.reason}::text,
  p_now => ${c.now}::timestamptz,
  p_trace_id => ${c.traceId}::text,
  p_traceparent => ${c.traceparent}::text,
  p_event_type => ${EVENT_TYPE[action]}::text,
  p_payload => ${db.json(c.payload)}::jsonb`;

export const keyedChangeParams = (db: Db, action: ChangeAction, c: KeyedChange) => db`
  ${changeParams(db, action, c)},
  p_purchase_id => ${c.purchaseId}::text,
  p_detail => ${db.json(c.detail)}::jsonb`;
