// The points handler: what one PointsEvent yields, and which events can never be stored (or would tell the user
// something false) and so are terminated.
import { describe, expect, test } from "bun:test";
import { PointsEvent_EventType } from "../../src/gen/points_event_pb.ts";
import { decodePointsEvent, pointsEvents } from "../../src/notification/intake/handlers/points.ts";
import { pointsBytes } from "./helpers.ts";

const rejected = (reason: string) => ({ ok: false as const, reason });

describe("decodePointsEvent", () => {
  test("an event yields one PointsGranted for its user, payload {reservation_id, point_amount, balance_after}", () => {
    const eventId = crypto.randomUUID();
    const reservationId = crypto.randomUUID();
    const occurredAt = "2026-11-26T03:30:00.123+01:00";
    const decoded = decodePointsEvent(
      pointsBytes({ eventId, occurredAt, userId: "u_1", reservationId, pointAmount: 250n, balanceAfter: 1_250n }),
    );
    expect(decoded).toEqual({
      ok: true,
      event: {
        eventId,
        notifications: [
          {
            userId: "u_1",
            type: "PointsGranted",
            occurredAt,
            payload: { reservation_id: reservationId, point_amount: 250, balance_after: 1_250 },
          },
        ],
      },
    });
    expect(pointsEvents.source).toBe("points");
  });

  test("the event id and reservation id are lower-cased like PostgreSQL prints them", () => {
    const decoded = decodePointsEvent(
      pointsBytes({
        eventId: "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
        reservationId: "B0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12",
      }),
    );
    expect(decoded.ok && decoded.event.eventId).toBe("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    expect(decoded.ok && decoded.event.notifications[0]?.payload.reservation_id).toBe(
      "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12",
    );
  });

  test("the limits themselves are accepted: 1 and 1,000,000,000 points, balance 0 and 2^53-1, empty trace_id", () => {
    for (const pointAmount of [1n, 1_000_000_000n]) {
      expect(decodePointsEvent(pointsBytes({ pointAmount })).ok).toBe(true);
    }
    const max = BigInt(Number.MAX_SAFE_INTEGER);
    const decoded = decodePointsEvent(pointsBytes({ balanceAfter: max, traceId: "", userId: "u".repeat(128) }));
    expect(decoded.ok && decoded.event.notifications[0]?.payload.balance_after).toBe(Number.MAX_SAFE_INTEGER);
    expect(decodePointsEvent(pointsBytes({ balanceAfter: 0n })).ok).toBe(true);
    expect(PointsEvent_EventType.POINTS_GRANTED).toBe(0);
  });

  test("undecodable bytes are permanent", () => {
    expect(decodePointsEvent(new Uint8Array([0x80]))).toEqual(rejected("undecodable points event"));
  });

  test.each([
    ["event_id not a UUID", { eventId: "bad-id" }, "invalid points event_id"],
    ["an empty event_id", { eventId: "" }, "invalid points event_id"],
    ["occurred_at not an instant", { occurredAt: "bad-time" }, "invalid points occurred_at"],
    ["occurred_at without an offset", { occurredAt: "2026-11-26T03:30:00" }, "invalid points occurred_at"],
    ["an offset PostgreSQL refuses", { occurredAt: "2026-11-26T03:30:00+18:00" }, "invalid points occurred_at"],
    ["an unknown event_type", { eventType: 3 as PointsEvent_EventType }, "unknown points event_type 3"],
    ["an empty user_id", { userId: "" }, "invalid points user_id"],
    ["a blank user_id", { userId: "   " }, "invalid points user_id"],
    ["a user_id of 129 characters", { userId: "u".repeat(129) }, "invalid points user_id"],
    ["a control character in user_id", { userId: "u\u001b[2J" }, "invalid points user_id"],
    ["NUL in user_id", { userId: "u\u0000" }, "invalid points user_id"],
    ["reservation_id not a UUID", { reservationId: "r-1" }, "invalid points reservation_id"],
    ["an empty reservation_id", { reservationId: "" }, "invalid points reservation_id"],
    ["point_amount 0", { pointAmount: 0n }, "invalid points point_amount"],
    ["a negative point_amount", { pointAmount: -5n }, "invalid points point_amount"],
    ["point_amount above 1e9", { pointAmount: 1_000_000_001n }, "invalid points point_amount"],
    ["a negative balance_after", { balanceAfter: -1n }, "invalid points balance_after"],
    ["balance_after beyond 2^53-1", { balanceAfter: 2n ** 53n }, "invalid points balance_after"],
    ["a newline in trace_id", { traceId: "t\n1" }, "invalid points trace_id"],
    ["a trace_id of 129 characters", { traceId: "t".repeat(129) }, "invalid points trace_id"],
  ])("%s is permanent", (_, fields, reason) => {
    expect(decodePointsEvent(pointsBytes(fields))).toEqual(rejected(reason));
  });
});
