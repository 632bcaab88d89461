// The outbox event of one applied command. The relay (outbox/) turns its payload into the protobuf message, so the
// payload carries every field of EntitlementEvent, named as in the reference's JSON payload.
import { traceparentOf } from "../../shared/trace-context.ts";
import { type ChangeAction, EVENT_TYPE } from "./model.ts";
import type { EntitlementRow, OutboxEvent } from "./queries.ts";

/**
 * The outbox row of reference §1.4 (payload fields as in §6.4, plus expires_at when the change sets one), with the
 * `traceparent` of the active span (the command's transaction), so the relay's publish joins the trace of the request.
 */
export function outboxEventOf(
  action: ChangeAction,
  row: EntitlementRow,
  body: { reason: string; purchase_id: string; expires_at?: string },
  traceId: string,
  now: Date,
): OutboxEvent {
  const eventId = crypto.randomUUID();
  const eventType = EVENT_TYPE[action];
  return {
    eventId,
    eventType,
    aggregateKey: `${row.user_id}:${row.stock_keeping_unit}`,
    createdAt: now,
    traceparent: traceparentOf() ?? null,
    payload: {
      event_id: eventId,
      event_type: eventType,
      occurred_at: now.toISOString(),
      user_id: row.user_id,
      stock_keeping_unit: row.stock_keeping_unit,
      source: body.reason,
      source_id: body.purchase_id,
      version: row.version,
      trace_id: traceId,
      // Only when set, so an event without expiry keeps the reference's payload exactly.
      ...(body.expires_at === undefined ? {} : { expires_at: body.expires_at }),
    },
  };
}
