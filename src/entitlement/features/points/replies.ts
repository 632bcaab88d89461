// A reservation as the API answers it, made here once: for a read, for the reply of a reservation (stored as it is)
// and of a cancel (the function adds the fields only the row knows), and the 409s of both, whose messages name a value
// the function fills in where `{balance}` or `{status}` stands.
import type { StoredReply } from "../../write/idempotency-params.ts";
import type { ReservationResponse } from "./model.ts";
import type { ReservationRow } from "./reservation-queries.ts";

export function toReservationResponse(row: ReservationRow): ReservationResponse {
  return {
    reservation_id: row.reservation_id,
    user_id: row.user_id,
    point_amount: row.point_amount,
    execute_at: row.execute_at.toISOString(),
    reason: row.reason,
    status: row.status,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    ...(row.executed_at ? { executed_at: row.executed_at.toISOString() } : {}),
    ...(row.transaction_id ? { transaction_id: row.transaction_id } : {}),
    ...(row.status === "FAILED" && row.last_error !== null ? { last_error: row.last_error } : {}),
  };
}

/** The 201 of a new reservation: the row as the function inserts it. */
export function reservedReply(
  r: { reservationId: string; userId: string; pointAmount: number; executeAt: Date; reason: string | null },
  now: Date,
): StoredReply {
  const row = {
    reservation_id: r.reservationId,
    user_id: r.userId,
    point_amount: r.pointAmount,
    execute_at: r.executeAt,
    reason: r.reason,
    status: "PENDING" as const,
    created_at: now,
    updated_at: now,
    executed_at: null,
    transaction_id: null,
    last_error: null,
  };
  return { code: 201, body: toReservationResponse(row) };
}

/** The 200 of a cancel: what the service knows; the function adds user_id, point_amount, execute_at, reason, created_at. */
export const cancelledReply = (reservationId: string, now: Date): StoredReply => ({
  code: 200,
  body: { reservation_id: reservationId, status: "CANCELLED", updated_at: now.toISOString() },
});

/** A balance leaves the service as a JSON number, exact only up to 2^53 - 1. */
export const BALANCE_LIMIT: StoredReply = {
  code: 409,
  body: {
    code: "POINTS_BALANCE_LIMIT",
    message: `the balance may not exceed ${Number.MAX_SAFE_INTEGER} points; it is {balance}`,
  },
};

export const NOT_PENDING: StoredReply = {
  code: 409,
  body: {
    code: "RESERVATION_STATE_CONFLICT",
    message: "reservation is {status}; only a PENDING reservation can be cancelled",
  },
};
