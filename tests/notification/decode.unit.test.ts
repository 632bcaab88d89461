import { describe, expect, test } from "bun:test";
import { EntitlementEvent_EventType } from "../../src/gen/entitlement_event_pb.ts";
import { parseAdvisory } from "../../src/notification/intake/advisories/parse.ts";
import { decodeEntitlementEvent } from "../../src/notification/intake/handlers/entitlement.ts";
import { isIsoInstant } from "../../src/notification/intake/handlers/fields.ts";
import { eventBytes } from "./helpers.ts";

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("decodeEntitlementEvent", () => {
  test("copies every field into the payload shape of the Java original", () => {
    const eventId = crypto.randomUUID();
    const decoded = decodeEntitlementEvent(
      eventBytes({
        eventId,
        eventType: EntitlementEvent_EventType.ENTITLEMENT_REVOKED,
        occurredAt: "2026-01-17T00:00:00.123456Z",
        userId: "u_1",
        stockKeepingUnit: "item_1",
        source: "purchase",
        sourceId: "p_1",
        version: 3n,
        traceId: "t-1",
      }),
    );
    expect(decoded).toEqual({
      ok: true,
      event: {
        eventId,
        notifications: [
          {
            userId: "u_1",
            type: "EntitlementRevoked",
            occurredAt: "2026-01-17T00:00:00.123456Z",
            payload: {
              event_id: eventId,
              event_type: "EntitlementRevoked",
              occurred_at: "2026-01-17T00:00:00.123456Z",
              user_id: "u_1",
              stock_keeping_unit: "item_1",
              source: "purchase",
              source_id: "p_1",
              version: 3,
              trace_id: "t-1",
            },
          },
        ],
      },
    });
  });

  test("ENTITLEMENT_EXTENDED becomes an EntitlementExtended notification carrying expires_at", () => {
    const decoded = decodeEntitlementEvent(
      eventBytes({ eventType: EntitlementEvent_EventType.ENTITLEMENT_EXTENDED, expiresAt: "2027-01-01T00:00:00.000Z" }),
    );
    expect(decoded.ok && decoded.event.notifications[0]?.type).toBe("EntitlementExtended");
    expect(decoded.ok && decoded.event.notifications[0]?.payload).toMatchObject({
      event_type: "EntitlementExtended",
      expires_at: "2027-01-01T00:00:00.000Z",
    });
    const bad = decodeEntitlementEvent(eventBytes({ expiresAt: "soon" }));
    expect(bad).toEqual({ ok: false, reason: "invalid entitlement expires_at" });
  });

  test("an event without expires_at (every event of an older producer) has no expires_at in its payload", () => {
    const decoded = decodeEntitlementEvent(eventBytes({}));
    expect(decoded.ok && "expires_at" in (decoded.event.notifications[0]?.payload ?? {})).toBe(false);
  });

  test("defaults absent proto3 fields: GRANTED and version 0 are not on the wire", () => {
    const decoded = decodeEntitlementEvent(eventBytes({ version: 0n }));
    expect(decoded.ok && decoded.event.notifications[0]?.type).toBe("EntitlementGranted");
    expect(decoded.ok && decoded.event.notifications[0]?.payload.version).toBe(0);
  });

  test("undecodable bytes are rejected", () => {
    expect(decodeEntitlementEvent(new Uint8Array([0x80]))).toEqual({
      ok: false,
      reason: "undecodable entitlement event",
    });
  });

  test.each(["bad-id", "1-1-1-1-1", "", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", `{${crypto.randomUUID()}}`])(
    "event_id %p is rejected (strict UUID)",
    (eventId) => {
      expect(decodeEntitlementEvent(eventBytes({ eventId }))).toEqual({
        ok: false,
        reason: "invalid entitlement event_id",
      });
    },
  );

  test("occurred_at that is not an ISO instant is rejected", () => {
    expect(decodeEntitlementEvent(eventBytes({ occurredAt: "bad-time" }))).toEqual({
      ok: false,
      reason: "invalid entitlement occurred_at",
    });
  });

  test("an unknown event type is terminated instead of stored as Unrecognized", () => {
    const decoded = decodeEntitlementEvent(eventBytes({ eventType: 99 as EntitlementEvent_EventType }));
    expect(decoded).toEqual({ ok: false, reason: "unknown entitlement event_type 99" });
  });

  test("a NUL character, which PostgreSQL text cannot hold, is rejected", () => {
    expect(decodeEntitlementEvent(eventBytes({ userId: "u\u0000x" })).ok).toBe(false);
  });

  test.each([
    ["user_id", { userId: "" }],
    ["user_id", { userId: "   " }],
    ["user_id", { userId: "u".repeat(129) }],
    ["user_id", { userId: "x".repeat(4_000) }],
    ["stock_keeping_unit", { stockKeepingUnit: "" }],
    ["stock_keeping_unit", { stockKeepingUnit: "s".repeat(129) }],
    ["source", { source: "r".repeat(65) }],
    ["source_id", { sourceId: "p".repeat(129) }],
    ["trace_id", { traceId: "t".repeat(129) }],
    ["version", { version: -1n }],
    ["version", { version: 2n ** 53n }],
  ] as const)("an event the database would refuse is rejected: %s %#", (field, fields) => {
    expect(decodeEntitlementEvent(eventBytes(fields))).toEqual({ ok: false, reason: `invalid entitlement ${field}` });
  });

  test("the producer's limits themselves are accepted", () => {
    const decoded = decodeEntitlementEvent(
      eventBytes({ userId: "u".repeat(128), version: 2n ** 53n - 1n, occurredAt: "2026-01-17T00:00:00-15:59" }),
    );
    expect(decoded.ok && decoded.event.notifications[0]?.payload.version).toBe(Number.MAX_SAFE_INTEGER);
  });

  test("event ids are compared lower-case", () => {
    const decoded = decodeEntitlementEvent(eventBytes({ eventId: "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11" }));
    expect(decoded.ok && decoded.event.eventId).toBe("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  });
});

describe("isIsoInstant", () => {
  test.each([
    "2026-01-17T00:00:00Z",
    "2026-01-17T00:00:00.120Z",
    "2026-01-17T00:00:00.123456789Z",
    "2026-01-17T09:00:00+09:00",
    "2024-02-29T23:59:59Z",
  ])("accepts %p", (text) => expect(isIsoInstant(text)).toBe(true));

  test.each([
    "2026-02-30T00:00:00Z",
    "2025-02-29T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-01-17T24:00:00Z",
    "2026-01-17T00:60:00Z",
    "2026-01-17 00:00:00Z",
    "2026-01-17T00:00:00",
    "2026-01-17",
    "0000-01-01T00:00:00Z",
    " 2026-01-17T00:00:00Z",
    "2026-01-17T00:00:00+18:00",
    "2026-01-17T00:00:00-16:00",
  ])("rejects %p", (text) => expect(isIsoInstant(text)).toBe(false));
});

describe("parseAdvisory", () => {
  test("reads stream_seq, stream, consumer and deliveries", () => {
    const parsed = parseAdvisory(
      json({
        type: "io.nats.jetstream.advisory.v1.max_deliver",
        stream: "s",
        consumer: "c",
        stream_seq: 42,
        deliveries: 10,
      }),
      "MAX_DELIVERIES",
    );
    expect(parsed).toEqual({
      ok: true,
      entry: { streamSeq: 42, stream: "s", consumer: "c", kind: "MAX_DELIVERIES", deliveries: 10 },
    });
  });

  test("deliveries and names are optional", () => {
    const parsed = parseAdvisory(json({ stream_seq: 7 }), "MSG_TERMINATED");
    expect(parsed).toEqual({
      ok: true,
      entry: { streamSeq: 7, stream: null, consumer: null, kind: "MSG_TERMINATED", deliveries: null },
    });
  });

  test.each(["{}", '{"stream_seq":"42"}', '{"stream_seq":0}', '{"stream_seq":-1}', '{"stream_seq":1.5}', "[]", "null"])(
    "a missing or non-positive-integer stream_seq (%s) is malformed",
    (body) => {
      expect(parseAdvisory(new TextEncoder().encode(body), "MAX_DELIVERIES").ok).toBe(false);
    },
  );

  test("invalid JSON is malformed", () => {
    expect(parseAdvisory(new TextEncoder().encode("{nope"), "MAX_DELIVERIES").ok).toBe(false);
  });
});
