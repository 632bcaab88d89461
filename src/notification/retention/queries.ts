// SQL of retention (as in the Java original). Bounds are exclusive: a row exactly at the threshold stays.
import type { Db } from "../../shared/db.ts";

export async function countStaleActive(db: Db, threshold: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from notifications
    where created_at < ${threshold} and status in ('PENDING', 'PROCESSING')`;
  return row?.n ?? 0;
}

/** Deletes at most `limit` SENT/FAILED notifications created before the threshold; returns how many. */
export async function deleteFinishedNotifications(db: Db, input: { threshold: Date; limit: number }): Promise<number> {
  const result = await db`
    delete from notifications where notification_id in (
      select notification_id from notifications
      where created_at < ${input.threshold} and status in ('SENT', 'FAILED')
      limit ${input.limit}
    )`;
  return result.count;
}

/** Deletes at most `limit` processed_events rows older than the threshold; returns how many. */
export async function deleteProcessedEvents(db: Db, input: { threshold: Date; limit: number }): Promise<number> {
  const result = await db`
    delete from processed_events where event_id in (
      select event_id from processed_events where processed_at < ${input.threshold} limit ${input.limit}
    )`;
  return result.count;
}
