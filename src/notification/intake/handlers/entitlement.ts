// Entitlement events (docs/events.md): one notification for the event's user, its payload copied from the event. The
// protobuf → notification mapping of this kind lives here; anything that can never be stored is rejected with a
// reason, so the consumer loop terminates it instead of letting the database refuse it.
import { fromBinary } from "@bufbuild/protobuf";
import {
  type EntitlementEvent,
  EntitlementEvent_EventType,
  EntitlementEventSchema,
} from "../../../gen/entitlement_event_pb.ts";
import { isBlank } from "../../../shared/ids.ts";
import type { DecodedEvent, EventHandler, NotificationDraft, NotificationType } from "../consumer/handler.ts";
import { decodeEvent, isIsoInstant } from "./fields.ts";

type EntitlementNotificationType = Extract<NotificationType, `Entitlement${string}`>;

/** The stored payload_json (snake_case keys, copied from the event; docs/events.md). */
export type EventPayload = {
  event_id: string;
  event_type: EntitlementNotificationType;
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

const TYPES: Record<number, EntitlementNotificationType> = {
  [EntitlementEvent_EventType.ENTITLEMENT_GRANTED]: "EntitlementGranted",
  [EntitlementEvent_EventType.ENTITLEMENT_REVOKED]: "EntitlementRevoked",
  [EntitlementEvent_EventType.ENTITLEMENT_EXTENDED]: "EntitlementExtended",
};

/**
 * The producer's limits (docs/api.md), so that nothing reaches the database that it would refuse: an over-long
 * user_id overflows the btree row of notifications_user_seq_key, and PostgreSQL text cannot hold NUL. Such an event
 * could never be stored, however often it was redelivered. Other control characters are kept: rows stored before the
 * producer refused them are still published and must still be notified.
 */
const STRING_LIMITS = [
  ["user_id", "userId", 1, 128],
  ["stock_keeping_unit", "stockKeepingUnit", 1, 128],
  ["source", "source", 0, 64],
  ["source_id", "sourceId", 0, 128],
  ["trace_id", "traceId", 0, 128],
] as const;

function invalidField(event: EntitlementEvent): string | undefined {
  for (const [name, key, min, max] of STRING_LIMITS) {
    const value = event[key];
    if (value.length < min || value.length > max || value.includes("\u0000") || !value.isWellFormed()) return name;
  }
  if (isBlank(event.userId)) return "user_id";
  if (event.version < 0n || event.version > BigInt(Number.MAX_SAFE_INTEGER)) return "version";
  return undefined;
}

export function decodeEntitlementEvent(body: Uint8Array): DecodedEvent {
  return decodeEvent("entitlement", () => fromBinary(EntitlementEventSchema, body), notificationsOf);
}

function notificationsOf(event: EntitlementEvent): NotificationDraft[] | string {
  const type = TYPES[event.eventType];
  if (!type) return `unknown entitlement event_type ${event.eventType}`;
  if (event.expiresAt !== "" && !isIsoInstant(event.expiresAt)) return "invalid entitlement expires_at";
  const invalid = invalidField(event);
  if (invalid) return `invalid entitlement ${invalid}`;
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
  return [{ userId: event.userId, type, occurredAt: event.occurredAt, payload }];
}

export const entitlementEvents: EventHandler = { source: "entitlement", decode: decodeEntitlementEvent };
