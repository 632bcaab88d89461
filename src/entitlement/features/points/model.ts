// TypeBox schemas of the points API (docs/api.md): the one source for validation (validation.ts), the types and
// the OpenAPI document.
import { type Static, Type } from "@sinclair/typebox";
import { LimitQuery } from "../../../shared/http/paging.ts";
import { UserId } from "../entitlements/model.ts";

export const MAX_POINT_AMOUNT = 1_000_000_000;
/** execute_at may be at most this far ahead. */
export const MAX_AHEAD_MS = 366 * 24 * 3_600_000;
export const MAX_REASON_LENGTH = 64;

export const ReservationBody = Type.Object(
  {
    user_id: UserId,
    point_amount: Type.Integer({ minimum: 1, maximum: MAX_POINT_AMOUNT, examples: [100] }),
    execute_at: Type.String({
      format: "date-time",
      description: "ISO-8601 with an offset, at most 366 days ahead; a past instant means as soon as possible.",
      examples: ["2026-01-15T10:00:00+09:00"],
    }),
    reason: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_REASON_LENGTH,
        description: "Why (free text).",
        examples: ["campaign"],
      }),
    ),
  },
  { title: "PointReservationRequest" },
);
/** The checked body: execute_at as sent (the request hash covers it), reason absent when not given. */
export type ReservationInput = { user_id: string; point_amount: number; execute_at: string; reason?: string };

export const ReservationStatus = Type.Union([
  Type.Literal("PENDING"),
  Type.Literal("PROCESSING"),
  Type.Literal("DONE"),
  Type.Literal("FAILED"),
  Type.Literal("CANCELLED"),
]);

export const ReservationResponse = Type.Object(
  {
    reservation_id: Type.String({ format: "uuid" }),
    user_id: Type.String(),
    point_amount: Type.Integer(),
    execute_at: Type.String({ format: "date-time" }),
    reason: Type.Union([Type.String(), Type.Null()]),
    status: ReservationStatus,
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
    executed_at: Type.Optional(Type.String({ format: "date-time", description: "Once DONE." })),
    transaction_id: Type.Optional(Type.String({ format: "uuid", description: "Once DONE." })),
    last_error: Type.Optional(Type.String({ description: "Once FAILED." })),
  },
  { title: "PointReservation" },
);
export type ReservationResponse = Static<typeof ReservationResponse>;

export const PointTransaction = Type.Object(
  {
    transaction_id: Type.String({ format: "uuid" }),
    reservation_id: Type.String({ format: "uuid" }),
    point_amount: Type.Integer(),
    reason: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String({ format: "date-time" }),
  },
  { title: "PointTransaction" },
);

export const PointsResponse = Type.Object(
  {
    user_id: Type.String(),
    balance: Type.Integer({ minimum: 0 }),
    transactions: Type.Array(PointTransaction, { description: "Newest first." }),
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: "null on the last page." }),
  },
  { title: "Points" },
);
export type PointsResponse = Static<typeof PointsResponse>;

export const ReservationParams = Type.Object({ reservation_id: Type.String({ format: "uuid" }) });

export const PageQuery = Type.Object({
  limit: LimitQuery("Transactions per page, 1–1000 (default 100)."),
  cursor: Type.Optional(Type.String({ description: "The next_cursor of the previous page." })),
});

const RESERVATION_KEYS = Object.keys(ReservationResponse.properties);

/** The reply text, keys in schema order, so a replay of the stored JSONB is byte-identical to the first reply. */
export function renderReply(status: number, body: unknown): string {
  return JSON.stringify(body, status < 300 ? RESERVATION_KEYS : ["code", "message"]);
}
