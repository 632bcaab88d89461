// A failed attempt of a claimed point reservation: one call of `point_fail` (db/entitlement/functions/), guarded by
// the claim: PENDING again at the retry time, or FAILED with its audit row.
import type { Db } from "../../shared/db.ts";

/** `retryAt` null: FAILED. True when the claim still held and the reservation changed. */
export async function failReservation(
  db: Db,
  args: { reservationId: string; lockedBy: string; now: Date; retryAt: Date | null; lastError: string },
): Promise<boolean> {
  const [row] = await db<{ changed: boolean }[]>`
    select point_fail(p_reservation_id => ${args.reservationId}::uuid, p_locked_by => ${args.lockedBy}::text,
                      p_now => ${args.now}::timestamptz, p_retry_at => ${args.retryAt}::timestamptz,
                      p_last_error => ${args.lastError}::text) as changed`;
  return row?.changed ?? false;
}
