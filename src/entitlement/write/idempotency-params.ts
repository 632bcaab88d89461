// The fragments every call of a command function shares: the Idempotency-Key's arguments, the columns the function
// returns, and the replies it stores under the key. The command runner (features/commands/run.ts) makes the
// arguments and reads the outcome; each call is a file of its own beside this one.
import type { JSONValue } from "postgres";
import type { Db } from "../../shared/db.ts";

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
 * What a command function returned: `stored` (a live record, nothing done), `applied` and `state_conflict` (what it
 * stored), or an outcome of the command's own (`past`, `not_found`, a scheduled change's `lost` or `unchanged`). What
 * it stores are facts (`replyFacts`), of which the service makes the reply; a record the previous release stored
 * before the upgrade has its `replyBody` instead.
 */
export type CommandOutcome = {
  outcome: string;
  storedHash: string | null;
  replyCode: number | null;
  replyBody: unknown;
  replyFacts: unknown;
  replyExpiresAt: Date | null;
};

/**
 * A reply with its status code, made by the service of the facts a command function stored (the features' replies.ts),
 * for the first answer and every replay alike.
 */
export type StoredReply = { code: number; body: JSONValue };

/** The columns every command function returns, named for CommandOutcome. */
export const OUTCOME_COLUMNS = (db: Db) => db`
  outcome, stored_hash as "storedHash", reply_code as "replyCode", reply_body as "replyBody",
  reply_facts as "replyFacts", reply_expires_at as "replyExpiresAt"`;
