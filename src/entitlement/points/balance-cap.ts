// The balance cap. A balance is a bigint in PostgreSQL, but it leaves the service as a JSON number: in the reply of
// GET /v1/users/{user_id}/points and as `balance_after` of the PointsGranted event that Notification turns into a
// notification. Past 2^53 − 1 a JSON number loses digits, so a balance may never pass it: a reservation that would
// take the user's balance past it is refused (409 POINTS_BALANCE_LIMIT, stored like any reply), and a CHECK on
// point_balances makes an execution that would still pass it (reservations made before others executed) fail and end
// FAILED with nothing granted and no event, instead of an event every consumer must refuse.
import type { Db } from "../../shared/db.ts";
import { findBalance } from "./ledger-queries.ts";

/** The largest balance a user may hold: 2^53 − 1 = 9,007,199,254,740,991 (Number.MAX_SAFE_INTEGER). */
export const MAX_BALANCE = BigInt(Number.MAX_SAFE_INTEGER);

export const BALANCE_LIMIT_CODE = "POINTS_BALANCE_LIMIT";

/** The 409 reply when `amount` more would take the balance past MAX_BALANCE, else undefined. */
export async function balanceLimitReply(db: Db, userId: string, amount: number) {
  const balance = await findBalance(db, userId);
  if (balance + BigInt(amount) <= MAX_BALANCE) return undefined;
  const message = `the balance may not exceed ${MAX_BALANCE} points; it is ${balance}`;
  return { status: 409, body: { code: BALANCE_LIMIT_CODE, message } };
}
