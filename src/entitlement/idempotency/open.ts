// How every command's transaction opens (grants, revokes, bundles, extensions, points): the statement time limit, the
// advisory lock on the Idempotency-Key, then the lookup of the key's live record under that lock.
import type { TransactionSql } from "postgres";
import { limitStatementTime } from "../entitlements/queries.ts";
import { findLiveIdempotencyRecord, type IdempotencyRecord, type Key, lockIdempotencyKey } from "./queries.ts";

/**
 * Issues the three statements at once and resolves to the live record, if any. A command's own statements issued
 * right after (in the same `Promise.all`) are pipelined behind them on the transaction's connection and run in order,
 * so they see whatever the lock's previous holder committed: one round trip for all.
 */
export async function openCommand(
  tx: TransactionSql,
  args: Key & { statementTimeoutMs: number },
): Promise<IdempotencyRecord | undefined> {
  const [, , stored] = await Promise.all([
    limitStatementTime(tx, args.statementTimeoutMs),
    lockIdempotencyKey(tx, args.key),
    findLiveIdempotencyRecord(tx, { caller: args.caller, key: args.key }),
  ]);
  return stored;
}
