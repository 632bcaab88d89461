// The reads of the scheduler's point-reservation kind (due-work.ts), one statement per function, handle first. Its
// writes, the claim, the execution and a failed attempt, are calls of write/point-claim.ts, point-execute.ts and
// point-fail.ts.
import type { Db } from "../../../shared/db.ts";

/** The earliest due_at of an unfinished reservation (a lease end included). */
export async function nextReservationDueAt(db: Db): Promise<Date | undefined> {
  const [row] = await db<{ at: Date | null }[]>`
    select min(due_at) as at from point_reservations where status in ('PENDING', 'PROCESSING')`;
  return row?.at ?? undefined;
}

export async function countDueReservations(db: Db, now: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from point_reservations
    where status in ('PENDING', 'PROCESSING') and due_at <= ${now}`;
  return row?.n ?? 0;
}

export async function countFailedReservations(db: Db): Promise<number> {
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from point_reservations where status = 'FAILED'`;
  return row?.n ?? 0;
}
