// The grant of one due point reservation: the one call of `point_execute`, made by the scheduler's points kind
// (work/points/due-work.ts) inside its transaction.
import type { Db } from "../../shared/db.ts";

export type Execution = {
  reservationId: string;
  lockedBy: string;
  /** The new ledger row's id (kept only when no row exists for the reservation yet). */
  transactionId: string;
  eventId: string;
  now: Date;
  /** The outbox subject of PointsGranted (points.events). */
  subject: string;
  /** The PointsGranted payload without balance_after, which the statement adds from the balance it produced. */
  payload: Record<string, string | number>;
};

/**
 * Executes a claimed reservation: one call of `point_execute` (db/entitlement/functions/), one statement in the
 * caller's transaction: the reservation DONE under its lease, the ledger row unless the reservation already has one,
 * and only then the balance, the audit row and the PointsGranted outbox event. `finalized` 0: the lease was lost; `granted` 0:
 * the reservation had been granted before.
 */
export async function executeReservation(
  db: Db,
  e: Execution,
): Promise<{ finalized: number; granted: number; balanceAfter: number | null }> {
  // Balances are capped at 2^53 - 1 (migration 012), so float8 carries them exactly.
  const [row] = await db<{ finalized: number; granted: number; balance_after: number | null }[]>`
    select finalized, granted, balance_after::float8 as balance_after
    from point_execute(${e.reservationId}, ${e.lockedBy}, ${e.transactionId}, ${e.eventId}, ${e.now}, ${e.subject},
                       ${db.json(e.payload)}::jsonb)`;
  return { finalized: row?.finalized ?? 0, granted: row?.granted ?? 0, balanceAfter: row?.balance_after ?? null };
}
