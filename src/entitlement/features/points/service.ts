// The points commands and reads (docs/api.md). A command is one call of `reserve_points` or
// `cancel_point_reservation` (write/), run as every command is (commands/run.ts): the key's lock and lookup, then a
// replay, or the change with its audit row and the idempotency record, committed together; the reply is made from the
// facts the function stored (replies.ts).
import type { Sql } from "postgres";
import { ApiError } from "../../../shared/http/errors.ts";
import { pageOf } from "../../../shared/http/paging.ts";
import { cancelPointReservation } from "../../write/cancel-point-reservation.ts";
import type { CommandOutcome, IdempotencyArgs } from "../../write/idempotency-params.ts";
import { reservePoints } from "../../write/reserve-points.ts";
import { type CommandDeps, type CommandReply, type KeyedCommand, runCommand } from "../commands/run.ts";
import { type PointsRequest, pointsRequestHash } from "./hash.ts";
import { findBalance, listTransactions } from "./ledger-queries.ts";
import { type PointsResponse, type ReservationInput, ReservationResponse } from "./model.ts";
import { pointsReply, toReservationResponse } from "./replies.ts";
import { findReservation } from "./reservation-queries.ts";
import { checkExecuteAt, type PageRequest } from "./validation.ts";

export type Reply = CommandReply<ReservationResponse>;

type Keyed = Omit<KeyedCommand, "keyScope">;

/** One points command: its function's call under the key, and the reply it stored or found. */
function runPoints(
  deps: CommandDeps,
  command: Keyed,
  spec: { action: "RESERVE" | "CANCEL"; request: PointsRequest; now: Date; dueAt?: Date },
  write: (context: { now: Date; traceId: string; idempotency: IdempotencyArgs }) => Promise<CommandOutcome>,
): Promise<Reply> {
  return runCommand<ReservationResponse>(deps, command, {
    action: spec.action,
    hash: pointsRequestHash(spec.request),
    ok: ReservationResponse,
    reply: pointsReply,
    now: spec.now,
    call: (idempotency, now) => write({ now, traceId: command.traceId, idempotency }),
    // A cancel of an id that does not exist is not remembered: nothing happened, and the caller may have mistyped it.
    refuse: (outcome) => {
      if (outcome === "not_found") throw new ApiError(404, "NOT_FOUND", "no such reservation");
    },
    ...(spec.dueAt ? { committed: { events: false, dueAt: spec.dueAt } } : {}),
  });
}

export function createReservation(deps: CommandDeps, command: Keyed & { body: ReservationInput }): Promise<Reply> {
  const { body } = command;
  const request = { action: "RESERVE" as const, ...body, reason: body.reason ?? null };
  // "As soon as possible" (a time already past) is now; the scheduler wakes at the reservation's due time.
  const now = deps.now();
  const executeAt = checkExecuteAt(body.execute_at, now);
  const reservation = {
    reservationId: crypto.randomUUID(),
    userId: body.user_id,
    pointAmount: body.point_amount,
    executeAt,
    reason: body.reason ?? null,
  };
  return runPoints(deps, command, { action: "RESERVE", request, now, dueAt: executeAt }, (context) =>
    reservePoints(deps.sql, { ...reservation, ...context }),
  );
}

/** PENDING → CANCELLED (200); any other state → 409 RESERVATION_STATE_CONFLICT, stored like any reply. */
export function cancelReservation(deps: CommandDeps, command: Keyed & { reservationId: string }): Promise<Reply> {
  const { reservationId } = command;
  const request = { action: "CANCEL" as const, reservation_id: reservationId };
  const now = deps.now();
  return runPoints(deps, command, { action: "CANCEL", request, now }, (context) =>
    cancelPointReservation(deps.sql, { reservationId, ...context }),
  );
}

export async function getReservation(sql: Sql, reservationId: string): Promise<ReservationResponse | undefined> {
  const row = await findReservation(sql, reservationId);
  return row && toReservationResponse(row);
}

/** The balance and one page of the ledger; an unknown user has balance 0 and no transactions. */
export async function getPoints(sql: Sql, userId: string, page: PageRequest): Promise<PointsResponse> {
  const [balance, rows] = await Promise.all([
    findBalance(sql, userId),
    listTransactions(sql, { userId, limit: page.limit + 1, after: page.cursor }),
  ]);
  const shown = pageOf(rows, page.limit, (t) => [t.created_at.toISOString(), t.transaction_id]);
  return {
    user_id: userId,
    balance: Number(balance),
    transactions: shown.items.map((t) => ({
      transaction_id: t.transaction_id,
      reservation_id: t.reservation_id,
      point_amount: t.point_amount,
      reason: t.reason,
      created_at: t.created_at.toISOString(),
    })),
    next_cursor: shown.nextCursor,
  };
}
