// How every idempotent command runs, once for all of them: its span and metric, its idempotency arguments (the
// request hash, the key's lock key, the record's lifetime, the bound on lock waits), the one call of its database
// function (a file of write/: one statement, its own transaction), the reply made of the facts it stored or of the live
// record it found (replayed, or a key conflict), and the signal after commit. Expected outcomes (replay, conflicts) are values;
// surprises are thrown. A walk of one command goes down to write/ once and comes back once.
import type { TSchema } from "@sinclair/typebox";
import type { Sql } from "postgres";
import { ApiError } from "../../../shared/http/errors.ts";
import type { Clock } from "../../../shared/runtime.ts";
import { inSpan } from "../../../shared/trace-context.ts";
import type { EdgeDeps } from "../../edge/route-deps.ts";
import type { CommandOutcome, IdempotencyArgs, StoredReply } from "../../write/idempotency-params.ts";
import type { CommittedWork } from "./committed.ts";
import { idempotencyLockKey } from "./lock-key.ts";
import type { CommandAction, CommandMetrics, CommandResult } from "./metrics.ts";
import { type ErrorReply, replayStored } from "./replay.ts";

export type CommandDeps = {
  sql: Sql;
  now: Clock;
  idempotencyTtlMs: number;
  /** Bounds each lock wait of a command (lock_timeout; SQLSTATE 55P03, answered 503). */
  statementTimeoutMs: number;
  metrics: CommandMetrics;
  /** Told after a command committed work for the background workers (work/wakeups.ts). */
  onCommitted?: (work: CommittedWork) => void;
};

/** What every route of the features receives from createApp (app.ts): a command's deps and the edge's. */
export type RouteDeps = CommandDeps & EdgeDeps;

/** What the request brings to every command besides its input. */
export type KeyedCommand = {
  idempotencyKey: string;
  traceId: string;
  /** The token name: whose key space the Idempotency-Key lives in; '' when authentication is disabled. */
  caller: string;
  /** Another key space than the caller's, for keys that are not one caller's (a bulk file's). */
  keyScope?: string;
};

export type CommandReply<T> = {
  kind: "applied" | "state_conflict" | "key_conflict" | "replayed";
  status: number;
  body: T | ErrorReply;
};

/** One command: what it is, and its one call. */
export type CommandSpec = {
  action: CommandAction;
  /** The request hash: the same request under the same key is replayed, another one is a key conflict. */
  hash: string;
  /** The shape of the command's stored success, checked on replay. */
  ok: TSchema;
  /** The command's clock reading, when its input was checked against it before (default: read here). */
  now?: Date;
  /**
   * The reply made of the facts the command's function stored, for its first answer and every replay (a record the
   * previous release stored before the upgrade has its reply instead).
   */
  reply: (facts: unknown) => StoredReply;
  /** The call of the command's function, with the key's arguments made at `now`. */
  call: (idempotency: IdempotencyArgs, now: Date) => Promise<CommandOutcome>;
  /** Throws the answer to an outcome of the command's own, where nothing was stored (a past expiry, an unknown id). */
  refuse?: (outcome: string, now: Date) => void;
  /** What an applied command leaves for the background workers. */
  committed?: CommittedWork;
};

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
export async function runCommand<T>(deps: CommandDeps, command: KeyedCommand, spec: CommandSpec) {
  try {
    const reply = await inSpan(`${spec.action} transaction`, {}, () => callOnce<T>(deps, command, spec));
    deps.metrics.record(spec.action, RESULT[reply.kind]);
    if (reply.kind === "applied" && spec.committed) deps.onCommitted?.(spec.committed);
    return reply;
  } catch (error) {
    // A refused request (400, 404) is the caller's mistake, not a failure of the service.
    if (!(error instanceof ApiError && error.status < 500)) deps.metrics.record(spec.action, "error");
    throw error;
  }
}

async function callOnce<T>(deps: CommandDeps, command: KeyedCommand, spec: CommandSpec): Promise<CommandReply<T>> {
  const now = spec.now ?? deps.now();
  const result = await spec.call(idempotencyArgs(deps, command, spec.hash, now), now);
  if (result.outcome === "stored") {
    if (result.storedHash === null || result.replyCode === null || result.replyExpiresAt === null) {
      throw new Error("a stored idempotency record without its hash, code or expiry");
    }
    // Another request's record is a key conflict, whatever it holds: only this command's own facts are made a reply.
    const { code, body } = result.storedHash === spec.hash ? replyOf(spec, result) : storedBody(result);
    const record = { requestHash: result.storedHash, responseCode: code, responseBody: body };
    return replayStored<T>({ ...record, expiresAt: result.replyExpiresAt }, spec.hash, spec.ok);
  }
  if (result.outcome === "applied" || result.outcome === "state_conflict") {
    const { code, body } = replyOf(spec, result);
    return { kind: result.outcome, status: code, body: body as T | ErrorReply };
  }
  spec.refuse?.(result.outcome, now);
  throw new Error(`unexpected command outcome ${result.outcome}`);
}

/** The reply: made from the stored facts, or the stored body when there are none. */
function replyOf(spec: CommandSpec, result: CommandOutcome): { code: number; body: unknown } {
  if (result.replyFacts === null) return storedBody(result);
  return spec.reply(result.replyFacts);
}

function storedBody(result: CommandOutcome): { code: number; body: unknown } {
  if (result.replyCode === null) throw new Error(`command outcome ${result.outcome} has no reply`);
  return { code: result.replyCode, body: result.replyBody };
}

function idempotencyArgs(
  deps: Pick<CommandDeps, "idempotencyTtlMs" | "statementTimeoutMs">,
  command: KeyedCommand,
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
