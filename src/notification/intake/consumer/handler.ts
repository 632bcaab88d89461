// What one kind of event contributes to the shared consumer loop (consumer/worker.ts): its name and how a message
// becomes notifications. Everything else (stream and durable set-up, batching, deduplication by event_id, the
// transaction, ack/nak/term, holding during a database outage, advisories, metrics) is the loop's.
// Adding a kind of event: docs/architecture.md "Adding a kind of event" (a handler file, its variables, one line in
// handlers/registry.ts).
import type { ConsumerSettings } from "./settings.ts";

/** Every notification `type` the handlers produce (the debug inbox documents them as its `type` values). */
export const NOTIFICATION_TYPES = [
  "EntitlementGranted",
  "EntitlementRevoked",
  "EntitlementExtended",
  "MatchFound",
  "PointsGranted",
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** One notification an event yields; the loop adds the ids, the status and the timestamps. */
export type NotificationDraft = {
  userId: string;
  type: NotificationType;
  /** The event's instant, as sent (ISO-8601, already validated). */
  occurredAt: string;
  /** Stored as `payload_json`; it is what the delivery channel sends. */
  payload: Record<string, unknown>;
};

/** A valid event: its id (the deduplication key, a UUID) and the notifications it yields (at least one). */
export type StoredEvent = {
  eventId: string;
  notifications: NotificationDraft[];
  /** The consume span's W3C trace context, stored with each notification for its delivery (set by the loop). */
  traceparent?: string;
};

export type DecodedEvent = { ok: true; event: StoredEvent } | { ok: false; reason: string };

export type EventHandler = {
  /** Names the pipeline in logs and in the `source` label of the metrics (`entitlement`, `matchmaking`). */
  source: string;
  /**
   * Decodes one message body. Anything the database would refuse must be rejected here with a reason: the loop
   * terminates such a message at once (it lands in notification_nats_dlq) instead of redelivering it.
   * Must not throw.
   */
  decode: (body: Uint8Array) => DecodedEvent;
};

/** A handler with the consumer it reads through (handlers/registry.ts builds the list from the configuration). */
export type EventPipeline = { handler: EventHandler; consumer: ConsumerSettings };
