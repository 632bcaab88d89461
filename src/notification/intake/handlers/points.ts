// Points events (docs/events.md): one `PointsGranted` notification for the user of each executed point reservation,
// payload {reservation_id, point_amount, balance_after}. Anything that could never be stored, or would tell the user
// something false (an amount outside the API's 1..1e9, a negative balance), is rejected with a reason, so the
// consumer loop terminates it instead of redelivering it.
import { fromBinary } from "@bufbuild/protobuf";
import { type PointsEvent, PointsEvent_EventType, PointsEventSchema } from "../../../gen/points_event_pb.ts";
import { isUuid } from "../../../shared/ids.ts";
import type { DecodedEvent, EventHandler, NotificationDraft } from "../consumer/handler.ts";
import { decodeEvent, isPlainText } from "./fields.ts";

/** The amounts a reservation can carry (docs/api.md). */
export const MAX_POINT_AMOUNT = 1_000_000_000n;

/** The payload is JSON: a balance beyond this would lose digits as a number. */
const MAX_BALANCE = BigInt(Number.MAX_SAFE_INTEGER);

export type PointsPayload = { reservation_id: string; point_amount: number; balance_after: number };

function invalidField(event: PointsEvent): string | undefined {
  if (!isPlainText(event.userId, 1, 128)) return "user_id";
  if (!isUuid(event.reservationId)) return "reservation_id";
  if (event.pointAmount < 1n || event.pointAmount > MAX_POINT_AMOUNT) return "point_amount";
  if (event.balanceAfter < 0n || event.balanceAfter > MAX_BALANCE) return "balance_after";
  if (!isPlainText(event.traceId, 0, 128)) return "trace_id";
  return undefined;
}

export function decodePointsEvent(body: Uint8Array): DecodedEvent {
  return decodeEvent("points", () => fromBinary(PointsEventSchema, body), notificationsOf);
}

function notificationsOf(event: PointsEvent): NotificationDraft[] | string {
  if (event.eventType !== PointsEvent_EventType.POINTS_GRANTED) return `unknown points event_type ${event.eventType}`;
  const invalid = invalidField(event);
  if (invalid) return `invalid points ${invalid}`;
  const payload: PointsPayload = {
    reservation_id: event.reservationId.toLowerCase(),
    point_amount: Number(event.pointAmount),
    balance_after: Number(event.balanceAfter),
  };
  return [{ userId: event.userId, type: "PointsGranted", occurredAt: event.occurredAt, payload }];
}

export const pointsEvents: EventHandler = { source: "points", decode: decodePointsEvent };
