// The retention deletes of idempotency records and published events (shared/periodic.ts deleteOldRows: bounded,
// resumed, by ctid). Bounds are inclusive: a row exactly at the threshold goes.
import type { Db } from "../../../shared/db.ts";
import { deleteOldRows, type Resume } from "../../../shared/periodic.ts";

/** Idempotency records with expires_at <= now. Returns how many it deleted. */
export function deleteExpiredIdempotencyKeys(db: Db, args: { now: Date; limit: number; resume?: Resume }) {
  return deleteOldRows(
    db,
    { table: "idempotency_keys", column: "expires_at", old: (q) => q`expires_at <= ${args.now}` },
    args,
  );
}

/** PUBLISHED events with published_at <= threshold; other statuses stay. Returns how many it deleted. */
export function deletePublishedOutboxEvents(db: Db, args: { threshold: Date; limit: number; resume?: Resume }) {
  return deleteOldRows(
    db,
    {
      table: "outbox_events",
      column: "published_at",
      old: (q) => q`status = 'PUBLISHED' and published_at <= ${args.threshold}`,
    },
    args,
  );
}
