// Entitlement events (CONTRACT §4): one notification for the event's user, its payload copied from the event. The
// protobuf → notification mapping of this kind (STYLE §14); anything that can never be stored is rejected with a
// reason, so the consumer loop terminates it instead of letting the database refuse it.
import { fromBinary } from "@bufbuild/protobuf";
import { EntitlementEvent_EventType, EntitlementEventSchema } from "../../gen/entitlement_event_pb.ts";
import { isUuid } from "../../shared/ids.ts";
import type { DecodedEvent, EventHandler } from "../consumer/handler.ts";
import { isIsoInstant } from "./fields.ts";

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

const TYPES: Record<number, NotificationType> = {
  [EntitlementEvent_EventType.ENTITLEMENT_GRANTED]: "EntitlementGranted",
  [EntitlementEvent_EventType.ENTITLEMENT_REVOKED]: "EntitlementRevoked",
  [EntitlementEvent_EventType.ENTITLEMENT_EXTENDED]: "EntitlementExtended",
};

export function decodeEntitlementEvent(body: Uint8Array): DecodedEvent {
  let event: ReturnType<typeof fromBinary<typeof EntitlementEventSchema>>;
  try {
    event = fromBinary(EntitlementEventSchema, body);
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
  const notification = { userId: event.userId, type, occurredAt: event.occurredAt, payload };
  return { ok: true, event: { eventId: event.eventId.toLowerCase(), notifications: [notification] } };
}

export const entitlementEvents: EventHandler = { source: "entitlement", decode: decodeEntitlementEvent };
