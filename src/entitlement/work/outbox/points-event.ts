// Maps a PointsGranted outbox row to a PointsEvent (docs/events.md). The row carries its subject (points.events by
// default, written by the scheduler from its configuration): a points row without one is never sent to the
// entitlement subject, where consumers would misread it, but FAILED as unencodable.
import { create, toBinary } from "@bufbuild/protobuf";
import { PointsEvent_EventType, PointsEventSchema } from "../../../gen/points_event_pb.ts";
import {
  type EncodedEvent,
  EventEncodingError,
  eventHeaders,
  type OutboxRow,
  readInstant,
  readPayload,
} from "./payload.ts";

export const POINTS_GRANTED = "PointsGranted";

const STRING_FIELDS = ["event_id", "occurred_at", "user_id", "reservation_id", "trace_id"];

function readAmount(value: unknown, field: string): bigint {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === "string" && /^\d{1,19}$/.test(value)) return BigInt(value);
  throw new EventEncodingError(`${field} is not a non-negative integer`);
}

export function encodePointsEvent(row: OutboxRow): EncodedEvent {
  if (!row.subject) throw new EventEncodingError("a PointsGranted row has no subject");
  const p = readPayload(row.payload);
  for (const field of STRING_FIELDS) {
    if (typeof p[field] !== "string") throw new EventEncodingError(`${field} is missing or not a string`);
  }
  const s = p as Record<string, string>;
  if (s.event_id?.toLowerCase() !== row.eventId.toLowerCase()) {
    throw new EventEncodingError("payload event_id differs from the row's event_id");
  }
  const occurredAt = readInstant(s.occurred_at ?? "");
  const message = create(PointsEventSchema, {
    eventId: row.eventId,
    eventType: PointsEvent_EventType.POINTS_GRANTED,
    occurredAt: s.occurred_at,
    userId: s.user_id,
    pointAmount: readAmount(p.point_amount, "point_amount"),
    balanceAfter: readAmount(p.balance_after, "balance_after"),
    reservationId: s.reservation_id,
    traceId: s.trace_id,
  });
  return {
    eventId: row.eventId,
    occurredAt,
    body: toBinary(PointsEventSchema, message),
    subject: row.subject,
    traceparent: row.traceparent ?? null,
    headers: eventHeaders(row, s),
  };
}
