// How every idempotent command runs, once for all of them: its idempotency arguments (the request hash, the key's
// lock key, the record's lifetime, the bound on lock waits), the call of its database function (one statement, its
// own transaction: db/entitlement/functions/), the reply the function stored, and the command metric. Expected outcomes (replay, conflicts) are values; surprises are thrown.
import type { TSchema } from "@sinclair/typebox";
import type { JSONValue, Sql } from "postgres";
import type { Db } from "../../shared/db.ts";
import { ApiError } from "../../shared/http/errors.ts";
import type { Clock } from "../../shared/runtime.ts";
import { inSpan } from "../../shared/trace-context.ts";
import type { CommittedWork } from "./committed.ts";
import { idempotencyLockKey } from "./idempotency/lock-key.ts";
import { type ErrorReply, replayStored } from "./idempotency/replay.ts";
import type { CommandAction, CommandMetrics, CommandResult } from "./metrics.ts";

export type CommandDeps = {
  sql: Sql;
  now: Clock;
  idempotencyTtlMs: number;
  /** Bounds each lock wait of a command (lock_timeout; SQLSTATE 55P03, answered 503). */
  statementTimeoutMs: number;
  metrics: CommandMetrics;
  /** Told after a command committed work for the background workers (wakeups/wakeups.ts). */
  onCommitted?: (work: CommittedWork) => void;
};

/** What the Idempotency-Key brings to a command's function. */
export type IdempotencyArgs = {
  /** Who runs the command: the audit row's caller, and the key space of the key unless `scope` names another. */
  caller: string;
  /**
   * The key space of the key when it is not the caller's: a bulk file's keys are the file's, whoever applies it, so the
   * file applied again from another seat replays. Grants and revokes, the only commands of a bulk file, honour it.
   */
  scope?: string;
  key: string;
  lockKey: bigint;
  requestHash: string;
  recordExpiresAt: Date;
  lockTimeoutMs: number;
};

export function idempotencyArgs(
  deps: Pick<CommandDeps, "idempotencyTtlMs" | "statementTimeoutMs">,
  command: { caller: string; idempotencyKey: string; keyScope?: string },
  requestHash: string,
  now: Date,
): IdempotencyArgs {
  return {
    caller: command.caller,
    scope: command.keyScope,
    key: command.idempotencyKey,
    lockKey: idempotencyLockKey(command.idempotencyKey),
    requestHash,
    recordExpiresAt: new Date(now.getTime() + deps.idempotencyTtlMs),
    lockTimeoutMs: deps.statementTimeoutMs,
  };
}

/** The idempotency parameters of a command function's call, as a fragment of its argument list. */
export function idempotencyParams(db: Db, k: IdempotencyArgs | null) {
  return db`
    p_caller => ${k?.caller ?? null}::text,
    p_idem_key => ${k?.key ?? null}::text,
    p_lock_key => ${k?.lockKey.toString() ?? null}::bigint,
    p_request_hash => ${k?.requestHash ?? null}::text,
    p_record_expires_at => ${k?.recordExpiresAt ?? null}::timestamptz,
    p_lock_timeout_ms => ${k?.lockTimeoutMs ?? null}::int`;
}

/**
 * What a command function returned: `stored` (a live record, nothing done), `applied` and `state_conflict` (the reply
 * it stored), or an outcome of the command's own (`past`, `not_found`, a scheduled change's `lost` or `unchanged`).
 */
export type CommandOutcome = {
  outcome: string;
  storedHash: string | null;
  replyCode: number | null;
  replyBody: unknown;
  replyExpiresAt: Date | null;
};

/**
 * A reply a command function stores under the key and returns: made by the service before the call, for the change
 * and for each refusal, with the values only the database knows filled in by the function (db/entitlement/functions/).
 */
export type StoredReply = { code: number; body: JSONValue };

/** The columns every command function returns, named for CommandOutcome. */
export const OUTCOME_COLUMNS = (db: Db) => db`
  outcome, stored_hash as "storedHash", reply_code as "replyCode", reply_body as "replyBody",
  reply_expires_at as "replyExpiresAt"`;

export type CommandReply<T> = {
  kind: "applied" | "state_conflict" | "key_conflict" | "replayed";
  status: number;
  body: T | ErrorReply;
};

/** The reply of a stored, applied or refused command; `ok` is the shape of its stored success, checked on replay. */
export function replyOf<T>(result: CommandOutcome, hash: string, ok: TSchema): CommandReply<T> {
  const { replyCode: code, replyBody: body } = result;
  if (result.outcome === "stored") {
    if (result.storedHash === null || code === null || result.replyExpiresAt === null) {
      throw new Error("a stored idempotency record without its hash, code or expiry");
    }
    const record = { requestHash: result.storedHash, responseCode: code, responseBody: body };
    return replayStored<T>({ ...record, expiresAt: result.replyExpiresAt }, hash, ok);
  }
  if (code === null) throw new Error(`command outcome ${result.outcome} has no reply`);
  if (result.outcome === "state_conflict") return { kind: "state_conflict", status: code, body: body as ErrorReply };
  if (result.outcome === "applied") return { kind: "applied", status: code, body: body as T };
  throw new Error(`unexpected command outcome ${result.outcome}`);
}

const RESULT: Record<CommandReply<unknown>["kind"], CommandResult> = {
  applied: "success",
  state_conflict: "conflict",
  key_conflict: "conflict",
  replayed: "idempotency_reused",
};

/**
 * Runs a command in a span of its own (the span the outbox rows remember, so the relay's publish continues the trace)
 * and counts its result; an applied command that left work for the workers says so after its commit.
 */
export async function recordCommand<R extends CommandReply<unknown>>(
  deps: Pick<CommandDeps, "metrics" | "onCommitted">,
  action: CommandAction,
  work: () => Promise<R>,
  committed?: (reply: R) => CommittedWork | undefined,
): Promise<R> {
  try {
    const reply = await inSpan(`${action} transaction`, {}, work);
    deps.metrics.record(action, RESULT[reply.kind]);
    const left = reply.kind === "applied" ? committed?.(reply) : undefined;
    if (left) deps.onCommitted?.(left);
    return reply;
  } catch (error) {
    // A refused request (400, 404) is the caller's mistake, not a failure of the service.
    if (!(error instanceof ApiError && error.status < 500)) deps.metrics.record(action, "error");
    throw error;
  }
}
