// SQL of a user's points: the balance and the ledger, newest first, paged by keyset (created_at, transaction_id).
import type { Db } from "../../../shared/db.ts";

export type TransactionRow = {
  transaction_id: string;
  reservation_id: string;
  point_amount: number;
  reason: string | null;
  created_at: Date;
};

/** The user's balance, exactly: bigint read as text (a float8 would round past 2^53), 0 for an unknown user. */
export async function findBalance(db: Db, userId: string): Promise<bigint> {
  const [row] = await db<{ balance: string }[]>`
    select balance::text as balance from point_balances where user_id = ${userId}`;
  return BigInt(row?.balance ?? 0);
}

/** Up to `limit` transactions of the user older than `after` (or the newest), newest first (point_transactions_user_idx). */
export async function listTransactions(
  db: Db,
  args: { userId: string; limit: number; after?: { createdAt: Date; transactionId: string } },
): Promise<TransactionRow[]> {
  const after = args.after
    ? db`and (created_at, transaction_id) < (${args.after.createdAt}::timestamptz, ${args.after.transactionId}::uuid)`
    : db``;
  return db<TransactionRow[]>`
    select transaction_id, reservation_id, point_amount::float8 as point_amount, reason, created_at
    from point_transactions
    where user_id = ${args.userId} ${after}
    order by created_at desc, transaction_id desc
    limit ${args.limit}`;
}
