// The arguments every change of entitlements gives its function, by name: whose items, why, when, the trace and the
// event (its type follows from the action); a command's change adds its purchase and audit detail (and its
// Idempotency-Key, which callCommand passes).
import type { JSONValue } from "postgres";
import { type ChangeAction, EVENT_TYPE } from "./change-action.ts";
import type { Arg } from "./function-call.ts";
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

export const changeArgs = (action: ChangeAction, c: ChangeFields): Arg[] => [
  ["p_user_id", "text", c.userId],
  ["p_reason", "text", c.reason],
  ["p_now", "timestamptz", c.now],
  ["p_trace_id", "text", c.traceId],
  ["p_traceparent", "text", c.traceparent],
  ["p_event_type", "text", EVENT_TYPE[action]],
  ["p_payload", "jsonb", c.payload],
];

export const keyedChangeArgs = (action: ChangeAction, c: KeyedChange): Arg[] => [
  ...changeArgs(action, c),
  ["p_purchase_id", "text", c.purchaseId],
  ["p_detail", "jsonb", c.detail],
];
