// SQL of retention. Bounds are exclusive: a row exactly at the threshold stays.
import type { Db } from "../../../shared/db.ts";
import { deleteOldRows, type Resume, type RetentionTarget } from "../../../shared/periodic.ts";

export async function countStaleActive(db: Db, threshold: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from notifications
    where created_at < ${threshold} and status in ('PENDING', 'PROCESSING')`;
  return row?.n ?? 0;
}

type OldRows = { threshold: Date; limit: number; resume?: Resume };

/** Deletes at most `limit` SENT/FAILED rows of `table` created before the threshold (deleteOldRows); returns how many. */
function deleteFinished(db: Db, table: "notifications" | "webhook_deliveries", args: OldRows) {
  const old: RetentionTarget["old"] = (q) => q`created_at < ${args.threshold} and status in ('SENT', 'FAILED')`;
  return deleteOldRows(db, { table, column: "created_at", old }, args);
}

/** SENT/FAILED notifications created before the threshold, as deleteFinished. */
export const deleteFinishedNotifications = (db: Db, args: OldRows) => deleteFinished(db, "notifications", args);

/** Deletes at most `limit` processed_events rows older than the threshold, as above; returns how many. */
export function deleteProcessedEvents(db: Db, args: OldRows) {
  return deleteOldRows(
    db,
    { table: "processed_events", column: "processed_at", old: (q) => q`processed_at < ${args.threshold}` },
    args,
  );
}

/** Deletes at most `limit` endpoint attempts logged before the threshold, as above; returns how many. */
export function deleteWebhookAttempts(db: Db, args: OldRows) {
  return deleteOldRows(db, { table: "webhook_attempts", column: "at", old: (q) => q`at < ${args.threshold}` }, args);
}

/** SENT/FAILED endpoint deliveries of notifications created before the threshold, as deleteFinished. */
export const deleteFinishedDeliveries = (db: Db, args: OldRows) => deleteFinished(db, "webhook_deliveries", args);

/** Deletes at most `limit` finished pushes (SENT, FAILED, EXPIRED) created before the threshold, as above. */
export function deleteFinishedPushes(db: Db, args: OldRows) {
  return deleteOldRows(
    db,
    {
      table: "push_deliveries",
      column: "created_at",
      old: (q) => q`created_at < ${args.threshold} and status not in ('PENDING', 'PROCESSING')`,
    },
    args,
  );
}

/**
 * Deletes at most `limit` send requests whose Idempotency-Key has expired (before `now`): a retry after that is a new
 * request anyway. Their notifications stay, under the notifications' own retention.
 */
export function deleteExpiredRequests(db: Db, args: { now: Date; limit: number; resume?: Resume }) {
  return deleteOldRows(
    db,
    { table: "notification_requests", column: "expires_at", old: (q) => q`expires_at < ${args.now}` },
    args,
  );
}
