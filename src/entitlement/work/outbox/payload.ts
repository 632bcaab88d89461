// What every outbox encoder shares (encode.ts, points-event.ts): the row it reads and the message it makes, reading
// the stored JSON payload, the error for a row that can never be encoded (retrying cannot help, so the relay FAILs it
// at once), and headers NATS accepts.
import { CONTROL_CHARACTERS } from "../../../shared/http/path.ts";

export type OutboxRow = {
  eventId: string;
  eventType: string;
  aggregateKey: string;
  payload: unknown;
  attemptCount: number;
  /** The W3C trace context of the command that wrote the row (null for rows from before tracing). */
  traceparent?: string | null;
  /** Where the relay publishes it; null or absent: the relay's configured entitlement subject. */
  subject?: string | null;
};

export type EncodedEvent = {
  eventId: string;
  occurredAt: Date;
  body: Uint8Array;
  headers: Record<"event_type" | "aggregate_key" | "occurred_at" | "trace_id", string>;
  traceparent?: string | null;
  /** Undefined: the relay's configured entitlement subject. */
  subject?: string;
};

/** A row whose payload or type can never become a protobuf message: retrying cannot help. */
export class EventEncodingError extends Error {
  constructor(message: string) {
    super(`outbox payload invalid: ${message}`);
    this.name = "EventEncodingError";
  }
}

export function readPayload(payload: unknown): Record<string, unknown> {
  const value = typeof payload === "string" ? parseJson(payload) : payload;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new EventEncodingError("payload is not a JSON object");
  }
  return value as Record<string, unknown>;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new EventEncodingError("payload is not JSON");
  }
}

export const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** ISO-8601 instants only (what the API writes); `new Date` alone would accept "1" as the year 2001. */
export function readInstant(text: string): Date {
  const at = INSTANT.test(text) ? new Date(text) : undefined;
  if (!at || Number.isNaN(at.getTime())) throw new EventEncodingError("occurred_at is not an ISO-8601 timestamp");
  return at;
}

/**
 * A header value NATS accepts: the client refuses CR and LF (the event could then never be published, whatever the
 * retries), so every control character is percent-encoded (`\n` → `%0A`). The API refuses control characters in ids,
 * so only rows stored before that rule are changed; the protobuf body keeps the exact values.
 */
export function headerValue(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

/** The headers every event carries (docs/events.md), from its row and its payload's time and trace id. */
export function eventHeaders(row: OutboxRow, payload: Record<string, string>): EncodedEvent["headers"] {
  return {
    event_type: headerValue(row.eventType),
    aggregate_key: headerValue(row.aggregateKey),
    occurred_at: headerValue(payload.occurred_at ?? ""),
    trace_id: headerValue(payload.trace_id ?? ""),
  };
}
