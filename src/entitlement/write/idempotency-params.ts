// What every call of a command function shares: the Idempotency-Key's value, the call itself and the outcome row it
// returns, and the replies it stores under the key. The command runner (features/commands/run.ts) makes the key's
// arguments and reads the outcome; each command's own arguments are a file of their own beside this one.
import type { JSONValue } from "postgres";
import type { Db } from "../../shared/db.ts";
import { type Arg, callFunction, Fields } from "./function-call.ts";

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

/**
 * The Idempotency-Key's arguments as the one value (idempotency_call, db/entitlement/021_idempotency_call.sql) every
 * command function takes as `p_idem`, the key space the caller's unless `scope` names another.
 */
export const idempotencyArg = (k: IdempotencyArgs): Arg => [
  "p_idem",
  "idempotency_call",
  new Fields([
    ["text", k.caller],
    ["text", k.key],
    ["bigint", k.lockKey.toString()],
    ["text", k.requestHash],
    ["timestamptz", k.recordExpiresAt],
    ["int", k.lockTimeoutMs],
    ["text", k.scope ?? null],
  ]),
];

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

/** The command functions of db/entitlement/functions/, each called once per command. */
export type CommandFunction =
  | "entitlement_status_change"
  | "extend_entitlement"
  | "undo_extension"
  | "reserve_points"
  | "cancel_point_reservation";

/**
 * One command: its function called with the command's own arguments (`args`, by name) and the key's value, one
 * statement in its own transaction; the outcome row it returned.
 */
export async function callCommand(
  db: Db,
  fn: CommandFunction,
  args: readonly Arg[],
  k: IdempotencyArgs,
): Promise<CommandOutcome> {
  // `fn` is one of CommandFunction's literals, written into the text so that tests and logs find the call by name.
  const [row] = await callFunction<CommandOutcome[]>(
    db,
    `select outcome, stored_hash as "storedHash", reply_code as "replyCode", reply_body as "replyBody",
            reply_facts as "replyFacts", reply_expires_at as "replyExpiresAt"
     from ${fn}($args)`,
    [...args, idempotencyArg(k)],
  );
  if (!row) throw new Error(`${fn} returned no row`);
  return row;
}
