// Grant, revoke and list (reference §1, §3). One command is one call of the database function `entitlement_command`
// (command-queries.ts), its own transaction: the advisory lock on the key, the idempotency lookup, then either a
// replay or the state change with its audit row, outbox event and idempotency record, all committed together.
// Expected outcomes (replay, conflicts) are values; surprises are thrown.
import { Value } from "@sinclair/typebox/value";
import type { Sql } from "postgres";
import { badRequest } from "../../shared/http/errors.ts";
import { decodeCursor, pageOf } from "../../shared/http/paging.ts";
import { parseInstant } from "../../shared/instant.ts";
import type { Clock } from "../../shared/runtime.ts";
import { inSpan } from "../../shared/trace-context.ts";
import { requestHash } from "../idempotency/hash.ts";
import { idempotencyLockKey } from "../idempotency/lock-key.ts";
import type { IdempotencyRecord } from "../idempotency/queries.ts";
import { replayStored } from "../idempotency/replay.ts";
import { type CommandOutcome, runEntitlementCommand } from "./command-queries.ts";
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
import { listEntitlementsOfUser } from "./queries.ts";
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

/** Runs a grant or revoke; throws only on database trouble (the call is then rolled back as a whole). */
export async function executeCommand(deps: CommandDeps, command: Command): Promise<CommandReply> {
  try {
    // The span the outbox row remembers (outbox-event.ts): the relay's publish span continues from it.
    const reply = await inSpan(`${command.action} transaction`, {}, () => runCommand(deps, command));
    deps.metrics.record(command.action, RESULT[reply.kind]);
    return reply;
  } catch (error) {
    deps.metrics.record(command.action, "error");
    throw error;
  }
}

/**
 * One call of `entitlement_command`, its own transaction: the lock, the lookup, then either nothing (a live record:
 * replay or key conflict; an expiry not ahead: 400) or the state change with its audit row, outbox event and
 * idempotency record, or only the 409 of a refused transition. Everything but the version is decided here.
 */
async function runCommand(deps: CommandDeps, command: Command): Promise<CommandReply> {
  const { action, body, caller, idempotencyKey: key } = command;
  const hash = requestHash({ action, ...body });
  const now = deps.now();
  // The reply and the event as for a new row; the function sets the version the upsert produced in both.
  const row = { user_id: body.user_id, stock_keeping_unit: body.stock_keeping_unit, status: TARGET_STATUS[action] };
  const result = await runEntitlementCommand(deps.sql, {
    action,
    caller,
    key,
    lockKey: idempotencyLockKey(key),
    requestHash: hash,
    userId: body.user_id,
    sku: body.stock_keeping_unit,
    reason: body.reason,
    purchaseId: body.purchase_id,
    expiresAt: body.expires_at === undefined ? null : new Date(body.expires_at),
    now,
    recordExpiresAt: new Date(now.getTime() + deps.idempotencyTtlMs),
    lockTimeoutMs: deps.statementTimeoutMs,
    auditId: crypto.randomUUID(),
    detail: { ...body },
    traceId: command.traceId,
    event: outboxEventOf(action, { ...row, version: 0, updated_at: now }, body, command.traceId, now),
    applied: {
      ...toEntitlementResponse({ ...row, version: 0, updated_at: now }),
      // A grant that sets an expiry says so in its reply, normalised to UTC as the check route shows it.
      ...(body.expires_at === undefined ? {} : { expires_at: new Date(body.expires_at).toISOString() }),
    },
    conflict: { code: "ENTITLEMENT_STATE_CONFLICT", message: `already ${TARGET_STATUS[action]}` },
  });
  switch (result.outcome) {
    case "stored":
      return replayStored<EntitlementResponse>(storedRecord(result), hash, EntitlementResponse);
    case "past":
      assertNotPast(body.expires_at, now);
      throw new Error("entitlement_command reported a past expiry that is not past");
    case "state_conflict":
      return { kind: "state_conflict", status: 409, body: result.replyBody as CommandReplyBody };
    case "applied":
      return { kind: "applied", status: 200, body: result.replyBody as CommandReplyBody };
  }
}

function storedRecord(result: CommandOutcome): IdempotencyRecord {
  if (result.storedHash === null || result.replyCode === null || result.replyExpiresAt === null) {
    throw new Error("entitlement_command: a stored record without its hash, code or expiry");
  }
  return {
    requestHash: result.storedHash,
    responseCode: result.replyCode,
    responseBody: result.replyBody,
    expiresAt: result.replyExpiresAt,
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
  if (!CURSOR_INSTANT.test(updatedAt) || !parseInstant(updatedAt) || !Value.Check(StockKeepingUnit, sku)) {
    throw badRequest("cursor is invalid");
  }
  return { updatedAt, sku };
}
