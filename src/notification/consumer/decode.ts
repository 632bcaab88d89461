// Protobuf message → notification row (the one mapping in this direction, STYLE §14). Anything that can never be
// stored is rejected here with a reason, so the consumer can term() it instead of letting the database refuse it.
import { fromBinary } from "@bufbuild/protobuf";
import { EntitlementEvent_EventType, EntitlementEventSchema } from "../../gen/entitlement_event_pb.ts";
import { isUuid } from "../../shared/ids.ts";

export type NotificationType = "EntitlementGranted" | "EntitlementRevoked" | "EntitlementExtended";

/** The stored payload_json, in the reference's shape (snake_case keys, copied from the event). */
export type EventPayload = {
  event_id: string;
  event_type: NotificationType;
  occurred_at: string;
  user_id: string;
  stock_keeping_unit: string;
  source: string;
  source_id: string;
  version: number;
  trace_id: string;
  /** Present when the event carries one (a grant with expiry, an extension). */
  expires_at?: string;
};

export type EventRecord = {
  eventId: string;
  userId: string;
  type: NotificationType;
  occurredAt: string;
  payload: EventPayload;
  /** The consume span's W3C trace context, stored with the notification for its delivery (set by the handler). */
  traceparent?: string;
};

export type DecodedEvent = { ok: true; record: EventRecord } | { ok: false; reason: string };

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/;

/** ISO-8601 instant with a Z or ±hh:mm offset whose every field is in range (no Feb 30, no hour 24). */
export function isIsoInstant(text: string): boolean {
  const m = INSTANT.exec(text);
  if (!m) return false;
  const n = (i: number) => Number(m[i]);
  const daysInMonth = new Date(Date.UTC(n(1), n(2), 0)).getUTCDate();
  const offsetOk = m[8] === "Z" || (n(9) <= 18 && n(10) < 60);
  const dateOk = n(1) >= 1 && n(2) >= 1 && n(2) <= 12 && n(3) >= 1 && n(3) <= daysInMonth;
  return dateOk && n(4) < 24 && n(5) < 60 && n(6) < 60 && offsetOk;
}

const TYPES: Record<number, NotificationType> = {
  [EntitlementEvent_EventType.ENTITLEMENT_GRANTED]: "EntitlementGranted",
  [EntitlementEvent_EventType.ENTITLEMENT_REVOKED]: "EntitlementRevoked",
  [EntitlementEvent_EventType.ENTITLEMENT_EXTENDED]: "EntitlementExtended",
};

export function decodeEntitlementEvent(bytes: Uint8Array): DecodedEvent {
  let event: ReturnType<typeof fromBinary<typeof EntitlementEventSchema>>;
  try {
    event = fromBinary(EntitlementEventSchema, bytes);
  } catch {
    return { ok: false, reason: "undecodable entitlement event" };
  }
  if (!isUuid(event.eventId)) return { ok: false, reason: "invalid entitlement event_id" };
  if (!isIsoInstant(event.occurredAt)) return { ok: false, reason: "invalid entitlement occurred_at" };
  const type = TYPES[event.eventType];
  if (!type) return { ok: false, reason: `unknown entitlement event_type ${event.eventType}` };
  if (event.expiresAt !== "" && !isIsoInstant(event.expiresAt)) {
    return { ok: false, reason: "invalid entitlement expires_at" };
  }
  const strings = [event.userId, event.stockKeepingUnit, event.source, event.sourceId, event.traceId];
  // PostgreSQL text cannot hold NUL: such an event could never be stored, however often it is redelivered.
  if (strings.some((s) => s.includes("\u0000"))) return { ok: false, reason: "entitlement event contains NUL" };
  const payload: EventPayload = {
    event_id: event.eventId,
    event_type: type,
    occurred_at: event.occurredAt,
    user_id: event.userId,
    stock_keeping_unit: event.stockKeepingUnit,
    source: event.source,
    source_id: event.sourceId,
    version: Number(event.version),
    trace_id: event.traceId,
    ...(event.expiresAt === "" ? {} : { expires_at: event.expiresAt }),
  };
  return {
    ok: true,
    record: { eventId: event.eventId.toLowerCase(), userId: event.userId, type, occurredAt: event.occurredAt, payload },
  };
}
