// Retention deletes, each bounded to `limit` rows per statement so no statement holds locks for long. The rows'
// physical addresses (ctid) are collected once into an array (an InitPlan): a join on a `limit` subquery may be
// rescanned per row and then deletes far more than the limit (measured: 23 rows with limit 10), and deleting by ctid
// is a TID scan, where deleting by primary key probed the key's index once per row (at 10 million rows mostly pages
// not in shared_buffers: 21 ms per 1,000 outbox rows against 3.6 at 100,000). The outer condition is re-checked so a
// row that changed after the subselect (a key renewed, an event requeued: a new row version, another ctid) is kept.
//
// Each batch takes the oldest rows in index order and tells `resume` where it stopped; the next batch of the same run
// starts there instead of at the head of the index, where the entries of the rows just deleted still lie (vacuum has
// not removed them yet): without it the k-th batch steps over k batches of dead entries, and a run's time per deleted
// row grows with the rows it deletes.
import type { Db } from "../../../shared/db.ts";
import { advance, BEGINNING, type Resume } from "../../../shared/periodic.ts";

/** Idempotency records with expires_at <= now (inclusive, as in the Java original). Returns how many it deleted. */
export async function deleteExpiredIdempotencyKeys(
  db: Db,
  args: { now: Date; limit: number; resume?: Resume },
): Promise<number> {
  const from = args.resume?.from ?? BEGINNING;
  const result = await db<{ expires_at: Date }[]>`
    delete from idempotency_keys
    where ctid = any(array(
      select ctid from idempotency_keys
      where expires_at <= ${args.now} and expires_at >= ${from}
      order by expires_at
      limit ${args.limit}
      for update skip locked
    ))
    and expires_at <= ${args.now}
    returning expires_at`;
  advance(args.resume, result, "expires_at");
  return result.count;
}

/** PUBLISHED events with published_at <= threshold (inclusive, as in the Java original); other statuses stay. */
export async function deletePublishedOutboxEvents(
  db: Db,
  args: { threshold: Date; limit: number; resume?: Resume },
): Promise<number> {
  const from = args.resume?.from ?? BEGINNING;
  const result = await db<{ published_at: Date }[]>`
    delete from outbox_events
    where ctid = any(array(
      select ctid from outbox_events
      where status = 'PUBLISHED' and published_at <= ${args.threshold}
        and published_at >= ${from}
      order by published_at
      limit ${args.limit}
      for update skip locked
    ))
    and status = 'PUBLISHED' and published_at <= ${args.threshold}
    returning published_at`;
  advance(args.resume, result, "published_at");
  return result.count;
}
