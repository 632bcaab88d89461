// Maps one outbox row to the message the relay publishes: the protobuf body and the headers of docs/events.md.
// A row that cannot be mapped never will be, so it is reported as an EventEncodingError and FAILED at once.
// Point events (PointsGranted) have their own message and subject (points-event.ts).
import { create, toBinary } from "@bufbuild/protobuf";
import { EntitlementEvent_EventType, EntitlementEventSchema } from "../../../gen/entitlement_event_pb.ts";
import {
  type EncodedEvent,
  EventEncodingError,
  eventHeaders,
  headerValue,
  INSTANT,
  type OutboxRow,
  readInstant,
  readPayload,
} from "./payload.ts";
import { encodePointsEvent, POINTS_GRANTED } from "./points-event.ts";

export type { EncodedEvent, OutboxRow };
export { EventEncodingError, headerValue };

const EVENT_TYPES: Record<string, EntitlementEvent_EventType> = {
  EntitlementGranted: EntitlementEvent_EventType.ENTITLEMENT_GRANTED,
  EntitlementRevoked: EntitlementEvent_EventType.ENTITLEMENT_REVOKED,
  EntitlementExtended: EntitlementEvent_EventType.ENTITLEMENT_EXTENDED,
};

const STRING_FIELDS = ["event_id", "occurred_at", "user_id", "stock_keeping_unit", "source", "source_id", "trace_id"];

function readVersion(value: unknown): bigint {
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === "string" && /^-?\d{1,19}$/.test(value)) return BigInt(value);
  throw new EventEncodingError("version is not an integer");
}

/** The payload's expires_at (absent on events without expiry, and on every event written before it existed). */
function readExpiresAt(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string" || !INSTANT.test(value) || Number.isNaN(new Date(value).getTime())) {
    throw new EventEncodingError("expires_at is not an ISO-8601 timestamp");
  }
  return value;
}

/** Builds the protobuf body and headers; event_type comes from the row. */
export function encodeOutboxEvent(row: OutboxRow): EncodedEvent {
  if (row.eventType === POINTS_GRANTED) return encodePointsEvent(row);
  const eventType = EVENT_TYPES[row.eventType];
  if (eventType === undefined) throw new EventEncodingError(`unknown event_type ${JSON.stringify(row.eventType)}`);
  const p = readPayload(row.payload);
  for (const field of STRING_FIELDS) {
    if (typeof p[field] !== "string") throw new EventEncodingError(`${field} is missing or not a string`);
  }
  const s = p as Record<string, string>;
  if (s.event_id !== row.eventId && s.event_id?.toLowerCase() !== row.eventId.toLowerCase()) {
    throw new EventEncodingError("payload event_id differs from the row's event_id");
  }
  const occurredAt = readInstant(s.occurred_at ?? "");
  const message = create(EntitlementEventSchema, {
    eventId: row.eventId,
    eventType,
    occurredAt: s.occurred_at,
    userId: s.user_id,
    stockKeepingUnit: s.stock_keeping_unit,
    source: s.source,
    sourceId: s.source_id,
    version: readVersion(p.version),
    traceId: s.trace_id,
    expiresAt: readExpiresAt(p.expires_at),
  });
  return {
    eventId: row.eventId,
    occurredAt,
    body: toBinary(EntitlementEventSchema, message),
    traceparent: row.traceparent ?? null,
    headers: eventHeaders(row, s),
  };
}
