// SQL of retention (as in the Java original). Bounds are exclusive: a row exactly at the threshold stays.
import type { Db } from "../../shared/db.ts";
import { advance, BEGINNING, type Resume } from "../../shared/periodic.ts";

export async function countStaleActive(db: Db, threshold: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from notifications
    where created_at < ${threshold} and status in ('PENDING', 'PROCESSING')`;
  return row?.n ?? 0;
}

/**
 * Deletes at most `limit` SENT/FAILED notifications created before the threshold, oldest first, from where the run's
 * previous batch stopped (`resume`, src/shared/periodic.ts); returns how many. Rows are deleted by their physical
 * address (a TID scan), not looked up again through the primary key (src/entitlement/work/retention/queries.ts).
 */
export async function deleteFinishedNotifications(
  db: Db,
  input: { threshold: Date; limit: number; resume?: Resume },
): Promise<number> {
  const from = input.resume?.from ?? BEGINNING;
  const result = await db<{ created_at: Date }[]>`
    delete from notifications
    where ctid = any(array(
      select ctid from notifications
      where created_at < ${input.threshold} and status in ('SENT', 'FAILED')
        and created_at >= ${from}
      order by created_at
      limit ${input.limit}
    ))
    and created_at < ${input.threshold} and status in ('SENT', 'FAILED')
    returning created_at`;
  advance(input.resume, result, "created_at");
  return result.count;
}

/** Deletes at most `limit` processed_events rows older than the threshold, as above; returns how many. */
export async function deleteProcessedEvents(
  db: Db,
  input: { threshold: Date; limit: number; resume?: Resume },
): Promise<number> {
  const from = input.resume?.from ?? BEGINNING;
  const result = await db<{ processed_at: Date }[]>`
    delete from processed_events
    where ctid = any(array(
      select ctid from processed_events
      where processed_at < ${input.threshold} and processed_at >= ${from}
      order by processed_at
      limit ${input.limit}
    ))
    and processed_at < ${input.threshold}
    returning processed_at`;
  advance(input.resume, result, "processed_at");
  return result.count;
}
