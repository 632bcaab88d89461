// The outbox event of one applied command. The relay (outbox/) turns its payload into the protobuf message, so the
// payload carries every field of EntitlementEvent, named as in the reference's JSON payload.
import { type Action, type CommandBody, EVENT_TYPE } from "./model.ts";
import type { EntitlementRow, OutboxEvent } from "./queries.ts";

/** The outbox row of reference §1.4 (payload fields as in §6.4). */
export function outboxEventOf(
  action: Action,
  row: EntitlementRow,
  body: CommandBody,
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
    },
  };
}
