// Encoding and failure arithmetic of the relay, without I/O.
import { describe, expect, test } from "bun:test";
import { fromBinary } from "@bufbuild/protobuf";
import { EventEncodingError, encodeOutboxEvent, type OutboxRow } from "../../src/entitlement/work/outbox/encode.ts";
import { planFailure, planRelease } from "../../src/entitlement/work/outbox/policy.ts";
import { EntitlementEvent_EventType, EntitlementEventSchema } from "../../src/gen/entitlement_event_pb.ts";
import { payloadFor, settingsFor } from "./outbox.helpers.ts";

const eventId = "7d9f3c0e-8a41-4c55-9d7e-2f1b6f0d9a11";
const occurredAt = "2026-01-17T00:00:00.123456Z";
const row = (over: Partial<OutboxRow> = {}): OutboxRow => ({
  eventId,
  eventType: "EntitlementRevoked",
  aggregateKey: "u_1:sku_1",
  payload: { ...payloadFor(eventId, {}, occurredAt), event_type: "EntitlementRevoked", version: 3 },
  attemptCount: 1,
  ...over,
});

describe("encodeOutboxEvent", () => {
  test("maps the payload to the wire contract and the headers of docs/events.md", () => {
    const encoded = encodeOutboxEvent(row());
    const message = fromBinary(EntitlementEventSchema, encoded.body);
    expect(message).toMatchObject({
      eventId,
      eventType: EntitlementEvent_EventType.ENTITLEMENT_REVOKED,
      occurredAt,
      userId: "u_1",
      stockKeepingUnit: "sku_1",
      source: "purchase",
      sourceId: "p_1",
      version: 3n,
      traceId: `trace-${eventId}`,
    });
    expect(encoded.headers).toEqual({
      event_type: "EntitlementRevoked",
      aggregate_key: "u_1:sku_1",
      occurred_at: occurredAt,
      trace_id: `trace-${eventId}`,
    });
    expect(encoded.occurredAt.toISOString()).toBe("2026-01-17T00:00:00.123Z");
  });

  test("a granted event at version 0 is valid although proto3 writes neither field", () => {
    const encoded = encodeOutboxEvent(
      row({ eventType: "EntitlementGranted", payload: payloadFor(eventId, {}, occurredAt) }),
    );
    const message = fromBinary(EntitlementEventSchema, encoded.body);
    expect(message.eventType).toBe(EntitlementEvent_EventType.ENTITLEMENT_GRANTED);
    expect(message.version).toBe(0n);
  });

  test("an extension is ENTITLEMENT_EXTENDED and carries expires_at in its new field", () => {
    const expiresAt = "2027-01-01T00:00:00.000Z";
    const payload = {
      ...payloadFor(eventId, {}, occurredAt),
      event_type: "EntitlementExtended",
      expires_at: expiresAt,
    };
    const message = fromBinary(
      EntitlementEventSchema,
      encodeOutboxEvent(row({ eventType: "EntitlementExtended", payload })).body,
    );
    expect(message.eventType).toBe(EntitlementEvent_EventType.ENTITLEMENT_EXTENDED);
    expect(message.expiresAt).toBe(expiresAt);
    expect(fromBinary(EntitlementEventSchema, encodeOutboxEvent(row()).body).expiresAt, "absent: empty").toBe("");
  });

  const poison: [string, Partial<OutboxRow>, string][] = [
    ["a bad expires_at", { payload: { ...payloadFor(eventId, {}, occurredAt), expires_at: "soon" } }, "expires_at"],
    ["an unknown event_type", { eventType: "EntitlementPaused" }, "unknown event_type"],
    ["a payload that is not an object", { payload: [1, 2] }, "not a JSON object"],
    ["a payload that is not JSON", { payload: "{oops" }, "not JSON"],
    ["a missing user_id", { payload: { ...payloadFor(eventId, {}, occurredAt), user_id: null } }, "user_id"],
    ["a bad occurred_at", { payload: payloadFor(eventId, {}, "yesterday") }, "occurred_at"],
    ["a bare number as occurred_at", { payload: payloadFor(eventId, {}, "1") }, "occurred_at"],
    ["a fractional version", { payload: { ...payloadFor(eventId, {}, occurredAt), version: 1.5 } }, "version"],
    ["another event's id", { payload: payloadFor(crypto.randomUUID(), {}, occurredAt) }, "event_id"],
  ];
  for (const [what, over, message] of poison) {
    test(`${what} can never be encoded`, () => {
      expect(() => encodeOutboxEvent(row(over))).toThrow(EventEncodingError);
      expect(() => encodeOutboxEvent(row(over))).toThrow(message);
    });
  }
});

describe("planFailure", () => {
  const settings = settingsFor("s");
  const now = new Date("2026-01-17T00:00:00Z");

  test("the first failed attempt is retried after 1–1.5 s", () => {
    for (const random of [0, 0.5, 0.999]) {
      const f = planFailure(settings, row({ attemptCount: 1 }), new Error("nats api error"), now, {
        random: () => random,
      });
      expect(f.status).toBe("PENDING");
      expect(f.attemptCount).toBe(1);
      expect(f.lastError, "the error text is kept").toBe("nats api error");
      const delay = (f.nextRetryAt?.getTime() ?? 0) - now.getTime();
      expect(delay).toBeGreaterThanOrEqual(1000);
      expect(delay).toBeLessThanOrEqual(1500);
    }
  });

  test("the attempt that uses the last try ends FAILED with attempt_count = max attempts", () => {
    expect(planFailure(settings, row({ attemptCount: 9 }), new Error("x"), now).status).toBe("PENDING");
    const f = planFailure(settings, row({ attemptCount: 10 }), new Error("x"), now);
    expect(f).toMatchObject({ status: "FAILED", attemptCount: 10, nextRetryAt: null });
  });

  test("a permanent error is FAILED at once as having used every attempt", () => {
    const f = planFailure(settings, row({ attemptCount: 1 }), new EventEncodingError("bad"), now, { permanent: true });
    expect(f).toMatchObject({
      status: "FAILED",
      attemptCount: 10,
      nextRetryAt: null,
      lastError: "outbox payload invalid: bad",
    });
  });

  test("the error is cut to the configured length, and a missing message is named", () => {
    const long = planFailure(settings, row(), new Error("e".repeat(1005)), now);
    expect(long.lastError).toBe("e".repeat(1000));
    expect(planFailure(settings, row(), new Error(""), now).lastError).toBe("unknown error");
  });

  test("a release while NATS is away gives the attempt back and is due at once", () => {
    const f = planRelease(settings, row({ attemptCount: 4 }), new Error("TIMEOUT"));
    expect(f).toMatchObject({ status: "PENDING", attemptCount: 3, nextRetryAt: null });
    expect(f.lastError).toBe("NATS disconnected: TIMEOUT");
  });
});
