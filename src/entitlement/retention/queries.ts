// Retention deletes, each bounded to `limit` rows per statement so no statement holds locks for long. The row ids are
// collected once into an array (an InitPlan): a join on a `limit` subquery may be rescanned per row and then deletes
// far more than the limit (measured: 23 rows with limit 10). The outer condition is re-checked so a row that changed
// after the subselect (a key renewed, an event requeued) is kept.
import type { Db } from "../../shared/db.ts";

/** Idempotency records with expires_at <= now (inclusive, as in the Java original). Returns how many it deleted. */
export async function deleteExpiredIdempotencyKeys(db: Db, args: { now: Date; limit: number }): Promise<number> {
  const result = await db`
    delete from idempotency_keys
    where ctid = any(array(
      select ctid from idempotency_keys
      where expires_at <= ${args.now}
      limit ${args.limit}
      for update skip locked
    ))
    and expires_at <= ${args.now}`;
  return result.count;
}

/** PUBLISHED events with published_at <= threshold (inclusive, as in the Java original); other statuses stay. */
export async function deletePublishedOutboxEvents(db: Db, args: { threshold: Date; limit: number }): Promise<number> {
  const result = await db`
    delete from outbox_events
    where event_id = any(array(
      select event_id from outbox_events
      where status = 'PUBLISHED' and published_at <= ${args.threshold}
      limit ${args.limit}
      for update skip locked
    ))
    and status = 'PUBLISHED' and published_at <= ${args.threshold}`;
  return result.count;
}
