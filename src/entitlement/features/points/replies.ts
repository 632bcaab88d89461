// A reservation as the API answers it, made here once: for a read, and for every reply of the points commands, made
// from the facts their functions stored (reserve_points, cancel_point_reservation), on the first answer and on every
// replay: the reservation's fields, the balance a reservation would take past the cap, a reservation's status.
import type { StoredReply } from "../../write/idempotency-params.ts";
import type { ReservationResponse } from "./model.ts";
import type { ReservationRow, ReservationStatus } from "./reservation-queries.ts";

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

/** A reservation's fields as the functions store them: instants as JSON strings. */
type ReservationFacts = {
  [K in keyof ReservationRow]: ReservationRow[K] extends Date | null ? string | null : ReservationRow[K];
};

/** What a points command's function stored: what happened, and what its reply names. */
export type PointsFacts =
  | { kind: "reserved" | "cancelled"; reservation: ReservationFacts }
  | { kind: "balance_limit"; balance: string }
  | { kind: "not_pending"; status: ReservationStatus };

const instant = (at: string | null) => (at === null ? null : new Date(at));

function rowOf(r: ReservationFacts): ReservationRow {
  return {
    ...r,
    execute_at: new Date(r.execute_at as string),
    created_at: new Date(r.created_at as string),
    updated_at: new Date(r.updated_at as string),
    executed_at: instant(r.executed_at),
  };
}

/** The reply of a points command, from its facts. */
export function pointsReply(stored: unknown): StoredReply {
  const facts = stored as PointsFacts;
  switch (facts.kind) {
    case "reserved":
      return { code: 201, body: toReservationResponse(rowOf(facts.reservation)) };
    case "cancelled": {
      // A cancel answers what it changed: a PENDING reservation never has an execution to show.
      const row = { ...rowOf(facts.reservation), executed_at: null, transaction_id: null, last_error: null };
      return { code: 200, body: toReservationResponse(row) };
    }
    case "balance_limit":
      return conflict(
        "POINTS_BALANCE_LIMIT",
        // A balance leaves the service as a JSON number, exact only up to 2^53 - 1.
        `the balance may not exceed ${Number.MAX_SAFE_INTEGER} points; it is ${facts.balance}`,
      );
    case "not_pending":
      return conflict(
        "RESERVATION_STATE_CONFLICT",
        `reservation is ${facts.status}; only a PENDING reservation can be cancelled`,
      );
    default:
      throw new Error(`no reply for the points facts ${JSON.stringify(stored)}`);
  }
}

const conflict = (code: string, message: string): StoredReply => ({ code: 409, body: { code, message } });
