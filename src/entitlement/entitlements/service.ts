// Grant, revoke and list (reference §1, §3). One command is one transaction: the advisory lock on the key, the
// idempotency lookup, then either a replay or the state change with its audit row, outbox event and idempotency
// record, all committed together. Expected outcomes (replay, conflicts) are values; surprises are thrown.
import { Value } from "@sinclair/typebox/value";
import type { Sql, TransactionSql } from "postgres";
import { badRequest } from "../../shared/http/errors.ts";
import { decodeCursor, pageOf } from "../../shared/http/paging.ts";
import type { Clock } from "../../shared/runtime.ts";
import { inSpan } from "../../shared/trace-context.ts";
import { requestHash } from "../idempotency/hash.ts";
import { openCommand } from "../idempotency/open.ts";
import { storeIdempotencyRecord } from "../idempotency/queries.ts";
import { assertStored, replayStored } from "../idempotency/replay.ts";
import { toEntitlementDetail, toEntitlementResponse } from "./detail.ts";
import type { CommandMetrics, CommandResult } from "./metrics.ts";
import {
  type Action,
  type CommandBody,
  type CommandReplyBody,
  EntitlementResponse,
  type EntitlementsResponse,
  StockKeepingUnit,
  TARGET_STATUS,
} from "./model.ts";
import { outboxEventOf } from "./outbox-event.ts";
import {
  type EntitlementRow,
  insertAppliedCommand,
  listEntitlementsOfUser,
  upsertGrantIfNotActive,
  upsertRevokeIfNotRevoked,
} from "./queries.ts";
import { assertNotPast } from "./validation.ts";

export type CommandDeps = {
  sql: Sql;
  now: Clock;
  idempotencyTtlMs: number;
  statementTimeoutMs: number;
  metrics: CommandMetrics;
};

export type Command = {
  action: Action;
  body: CommandBody;
  idempotencyKey: string;
  traceId: string;
  /** The token name: whose key space the Idempotency-Key lives in; '' when authentication is disabled. */
  caller: string;
};

export type CommandReply = {
  kind: "applied" | "state_conflict" | "key_conflict" | "replayed";
  status: number;
  body: CommandReplyBody;
};

const RESULT: Record<CommandReply["kind"], CommandResult> = {
  applied: "success",
  state_conflict: "conflict",
  key_conflict: "conflict",
  replayed: "idempotency_reused",
};

/** Runs a grant or revoke; throws only on database trouble (the transaction is then rolled back). */
export async function executeCommand(deps: CommandDeps, command: Command): Promise<CommandReply> {
  try {
    // The span the outbox row remembers (outbox-event.ts): the relay's publish span continues from it.
    const reply = await inSpan(`${command.action} transaction`, {}, () =>
      deps.sql.begin((tx) => executeInTransaction(tx, deps, command)),
    );
    deps.metrics.record(command.action, RESULT[reply.kind]);
    return reply;
  } catch (error) {
    deps.metrics.record(command.action, "error");
    throw error;
  }
}

async function executeInTransaction(tx: TransactionSql, deps: CommandDeps, command: Command): Promise<CommandReply> {
  const { action, body, caller, idempotencyKey: key } = command;
  const hash = requestHash({ action, ...body });
  const now = deps.now();
  const change = {
    userId: body.user_id,
    sku: body.stock_keeping_unit,
    reason: body.reason,
    purchaseId: body.purchase_id,
    now,
    expiresAt: body.expires_at === undefined ? null : new Date(body.expires_at),
    unlessKeyIsLive: { caller, key },
  };
  // One round trip with the opening statements; the upsert changes nothing when the lookup finds a live record.
  // Four round trips a command instead of five (begin, this, the inserts, commit).
  const [stored, row] = await Promise.all([
    openCommand(tx, { caller, key, statementTimeoutMs: deps.statementTimeoutMs }),
    action === "GRANT" ? upsertGrantIfNotActive(tx, change) : upsertRevokeIfNotRevoked(tx, change),
  ]);
  if (stored) {
    if (row) throw new Error("idempotency invariant violated: a replayed key changed an entitlement");
    return replayStored<EntitlementResponse>(stored, hash, EntitlementResponse);
  }
  assertNotPast(command.body.expires_at, now);
  return applyCommand(tx, deps, command, hash, row, now);
}

/** Everything that commits with the state change; a refused transition (no row) only records its 409. */
async function applyCommand(
  tx: TransactionSql,
  deps: CommandDeps,
  command: Command,
  hash: string,
  row: EntitlementRow | undefined,
  now: Date,
): Promise<CommandReply> {
  const { action, body } = command;
  const expiresAt = new Date(now.getTime() + deps.idempotencyTtlMs);

  if (!row) {
    const message = `already ${TARGET_STATUS[action]}`;
    const conflict = { status: 409, body: { code: "ENTITLEMENT_STATE_CONFLICT", message } };
    // Remembered and committed, so that a retry with this key gets the same answer.
    assertStored(await storeIdempotencyRecord(tx, replyRecord(command, hash, expiresAt, conflict)));
    return { kind: "state_conflict", ...conflict } satisfies CommandReply;
  }
  const applied = { status: 200, body: toEntitlementResponse(row) };
  const stored = await insertAppliedCommand(tx, {
    audit: {
      userId: row.user_id,
      sku: row.stock_keeping_unit,
      action,
      version: row.version,
      reason: body.reason,
      purchaseId: body.purchase_id,
      requestId: command.idempotencyKey,
      caller: command.caller === "" ? null : command.caller,
      detail: { ...body },
      traceId: command.traceId,
      occurredAt: now,
    },
    event: outboxEventOf(action, row, body, command.traceId, now),
    reply: replyRecord(command, hash, expiresAt, applied),
    ...(body.expires_at === undefined
      ? {}
      : {
          expiry: {
            userId: row.user_id,
            skus: [row.stock_keeping_unit],
            expiresAt: new Date(body.expires_at),
            traceId: command.traceId,
            now,
          },
        }),
  });
  assertStored(stored);
  return { kind: "applied", ...applied } satisfies CommandReply;
}

function replyRecord(command: Command, hash: string, expiresAt: Date, reply: Omit<CommandReply, "kind">) {
  return {
    caller: command.caller,
    key: command.idempotencyKey,
    requestHash: hash,
    responseCode: reply.status,
    responseBody: reply.body,
    expiresAt,
  };
}

/** One page of the user's entitlements, newest first; an unknown user has none. */
export async function listEntitlements(
  sql: Sql,
  input: { userId: string; limit: number; after?: ListCursor },
): Promise<EntitlementsResponse> {
  const rows = await listEntitlementsOfUser(sql, { ...input, limit: input.limit + 1 });
  const page = pageOf(rows, input.limit, (row) => [row.updated_key, row.stock_keeping_unit]);
  return {
    user_id: input.userId,
    entitlements: page.items.map((row) => {
      const { user_id: _, ...item } = toEntitlementDetail(row);
      return item;
    }),
    next_cursor: page.nextCursor,
  };
}

const CURSOR_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export type ListCursor = { updatedAt: string; sku: string };

/** The key a previous page ended with; anything this service did not make is 400. */
export function readListCursor(cursor: string | undefined): ListCursor | undefined {
  const key = decodeCursor(cursor, 2);
  if (!key) return undefined;
  const [updatedAt = "", sku = ""] = key;
  if (!CURSOR_INSTANT.test(updatedAt) || Number.isNaN(Date.parse(updatedAt)) || !Value.Check(StockKeepingUnit, sku)) {
    throw badRequest("cursor is invalid");
  }
  return { updatedAt, sku };
}
