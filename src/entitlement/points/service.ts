// The points commands and reads (CONTRACT §3.1a). A command is one transaction: the advisory lock on the key, the
// idempotency lookup, then a replay, or the change with its audit row and the idempotency record, committed together.
// Expected outcomes (replay, key conflict, too late to cancel) are values; surprises are thrown.
import type { Sql, TransactionSql } from "postgres";
import { pageOf } from "../../shared/http/paging.ts";
import type { Clock } from "../../shared/runtime.ts";
import { openCommand } from "../idempotency/open.ts";
import { type IdempotencyRecord, storeIdempotencyRecord } from "../idempotency/queries.ts";
import { assertStored, KEY_CONFLICT } from "../idempotency/replay.ts";
import { balanceLimitReply } from "./balance-cap.ts";
import { type PointsRequest, pointsRequestHash } from "./hash.ts";
import { findBalance, listTransactions } from "./ledger-queries.ts";
import type { PointsResponse, ReservationInput, ReservationResponse } from "./model.ts";
import {
  cancelPendingReservation,
  findReservation,
  insertReservation,
  type ReservationRow,
} from "./reservation-queries.ts";
import { checkExecuteAt, type PageRequest } from "./validation.ts";

export type PointsDeps = { sql: Sql; now: Clock; idempotencyTtlMs: number; statementTimeoutMs: number };

export type Reply = { status: number; body: unknown; kind: "applied" | "replayed" | "conflict" };

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

/** Runs `change` under the key's lock unless a live record answers for it; stores what `change` replied. */
async function idempotent(
  deps: PointsDeps,
  command: Keyed & { request: PointsRequest },
  change: (tx: TransactionSql, now: Date) => Promise<{ status: number; body: unknown }>,
): Promise<Reply> {
  const hash = pointsRequestHash(command.request);
  const key = { caller: command.caller, key: command.idempotencyKey };
  return deps.sql.begin(async (tx) => {
    const stored = await openCommand(tx, { ...key, statementTimeoutMs: deps.statementTimeoutMs });
    if (stored) return replay(stored, hash);
    const now = deps.now();
    const reply = await change(tx, now);
    const expiresAt = new Date(now.getTime() + deps.idempotencyTtlMs);
    const written = await storeIdempotencyRecord(tx, {
      ...key,
      requestHash: hash,
      responseCode: reply.status,
      responseBody: reply.body,
      expiresAt,
    });
    assertStored(written);
    return { ...reply, kind: reply.status < 300 ? "applied" : "conflict" };
  });
}

function replay(stored: IdempotencyRecord, hash: string): Reply {
  if (stored.requestHash !== hash) return { status: 409, body: KEY_CONFLICT, kind: "conflict" };
  return { status: stored.responseCode, body: stored.responseBody, kind: "replayed" };
}

export function createReservation(deps: PointsDeps, command: Keyed & { body: ReservationInput }): Promise<Reply> {
  const { body } = command;
  const request = { action: "RESERVE" as const, ...body, reason: body.reason ?? null };
  return idempotent(deps, { ...command, request }, async (tx, now) => {
    const overLimit = await balanceLimitReply(tx, body.user_id, body.point_amount);
    if (overLimit) return overLimit;
    const row = await insertReservation(tx, {
      reservationId: crypto.randomUUID(),
      userId: body.user_id,
      pointAmount: body.point_amount,
      executeAt: checkExecuteAt(body.execute_at, now),
      reason: body.reason ?? null,
      traceId: command.traceId,
      caller: command.caller === "" ? null : command.caller,
      now,
    });
    return { status: 201, body: toReservationResponse(row) };
  });
}

export class ReservationNotFound extends Error {}

/** PENDING → CANCELLED (200); any other state → 409 RESERVATION_STATE_CONFLICT, stored like any reply. */
export function cancelReservation(deps: PointsDeps, command: Keyed & { reservationId: string }): Promise<Reply> {
  const request = { action: "CANCEL" as const, reservation_id: command.reservationId };
  return idempotent(deps, { ...command, request }, async (tx, now) => {
    const cancelled = await cancelPendingReservation(tx, {
      reservationId: command.reservationId,
      caller: command.caller === "" ? null : command.caller,
      traceId: command.traceId,
      now,
    });
    if (cancelled) return { status: 200, body: toReservationResponse(cancelled) };
    const found = await findReservation(tx, command.reservationId);
    // An unknown id is not remembered: nothing happened, and the caller may have mistyped it.
    if (!found) throw new ReservationNotFound();
    const message = `reservation is ${found.status}; only a PENDING reservation can be cancelled`;
    return { status: 409, body: { code: "RESERVATION_STATE_CONFLICT", message } };
  });
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
