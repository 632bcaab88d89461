// Checks the event handlers share, so that what reaches the database is what it accepts, and the prologue every
// decoder starts with.
import { isUuid } from "../../../shared/ids.ts";
import { parseInstant } from "../../../shared/instant.ts";
import type { DecodedEvent, NotificationDraft } from "../consumer/handler.ts";

/**
 * An instant as the Entitlement API accepts one (shared/instant.ts): no Feb 30, no hour 24, an offset PostgreSQL
 * accepts (`+18:00` is valid ISO-8601 but fails the insert, and so the whole batch), a year it stores.
 */
export function isIsoInstant(text: string): boolean {
  return parseInstant(text) !== undefined;
}

/** The text rule of both services (shared/ids.ts): the consumer accepts every id the Entitlement API commits. */
export { isPlainText } from "../../../shared/ids.ts";

/**
 * Decodes one event of `kind`: the protobuf, its event_id and occurred_at, then `notify`, the kind's own checks and
 * notifications, which returns a reason instead when the event can never be stored. Every reason names the kind.
 */
export function decodeEvent<E extends { eventId: string; occurredAt: string }>(
  kind: string,
  parse: () => E,
  notify: (event: E) => NotificationDraft[] | string,
): DecodedEvent {
  let event: E;
  try {
    event = parse();
  } catch {
    return { ok: false, reason: `undecodable ${kind} event` };
  }
  if (!isUuid(event.eventId)) return { ok: false, reason: `invalid ${kind} event_id` };
  if (!isIsoInstant(event.occurredAt)) return { ok: false, reason: `invalid ${kind} occurred_at` };
  const notifications = notify(event);
  if (typeof notifications === "string") return { ok: false, reason: notifications };
  return { ok: true, event: { eventId: event.eventId.toLowerCase(), notifications } };
}
