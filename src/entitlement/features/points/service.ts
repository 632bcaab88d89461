// The points commands and reads (docs/api.md). A command is one call of `point_command` (command-queries.ts), run
// as every command is (commands/run.ts): the key's lock and lookup, then a replay, or the change with its audit row
// and the idempotency record, committed together.
import type { Sql } from "postgres";
import { ApiError } from "../../../shared/http/errors.ts";
import { pageOf } from "../../../shared/http/paging.ts";
import { type PointCommandCall, runPointCommand } from "../../write/point-commands.ts";
import { type CommandDeps, type CommandReply, idempotencyArgs, recordCommand, replyOf } from "../../write/run.ts";
import { type PointsRequest, pointsRequestHash } from "./hash.ts";
import { findBalance, listTransactions } from "./ledger-queries.ts";
import { type PointsResponse, type ReservationInput, ReservationResponse } from "./model.ts";
import { findReservation, type ReservationRow } from "./reservation-queries.ts";
import { checkExecuteAt, type PageRequest } from "./validation.ts";

export type Reply = CommandReply<ReservationResponse>;

type Keyed = { idempotencyKey: string; caller: string; traceId: string };

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

/** One points command: its function's call under the key, and the reply it stored or found. */
async function runPoints(deps: CommandDeps, command: Keyed, request: PointsRequest, call: PointCommandCall, now: Date) {
  const hash = pointsRequestHash(request);
  const result = await runPointCommand(deps.sql, {
    ...call,
    now,
    traceId: command.traceId,
    idempotency: idempotencyArgs(deps, command, hash, now),
  });
  // A cancel of an id that does not exist is not remembered: nothing happened, and the caller may have mistyped it.
  if (result.outcome === "not_found") throw new ApiError(404, "NOT_FOUND", "no such reservation");
  return replyOf<ReservationResponse>(result, hash, ReservationResponse);
}

export function createReservation(deps: CommandDeps, command: Keyed & { body: ReservationInput }): Promise<Reply> {
  const { body } = command;
  const request = { action: "RESERVE" as const, ...body, reason: body.reason ?? null };
  // "As soon as possible" (a time already past) is now; the scheduler wakes at the reservation's due time.
  const now = deps.now();
  const executeAt = checkExecuteAt(body.execute_at, now);
  const call = {
    action: "RESERVE" as const,
    reservationId: crypto.randomUUID(),
    userId: body.user_id,
    pointAmount: body.point_amount,
    executeAt,
    reason: body.reason ?? null,
  };
  return recordCommand(
    deps,
    "RESERVE",
    () => runPoints(deps, command, request, call, now),
    () => ({ events: false, dueAt: executeAt }),
  );
}

/** PENDING → CANCELLED (200); any other state → 409 RESERVATION_STATE_CONFLICT, stored like any reply. */
export function cancelReservation(deps: CommandDeps, command: Keyed & { reservationId: string }): Promise<Reply> {
  const request = { action: "CANCEL" as const, reservation_id: command.reservationId };
  const call = { action: "CANCEL" as const, reservationId: command.reservationId };
  return recordCommand(deps, "CANCEL", () => runPoints(deps, command, request, call, deps.now()));
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
