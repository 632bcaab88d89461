// SQL of retention. Bounds are exclusive: a row exactly at the threshold stays.
import type { Db } from "../../../shared/db.ts";
import { deleteOldRows, type Resume } from "../../../shared/periodic.ts";

export async function countStaleActive(db: Db, threshold: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from notifications
    where created_at < ${threshold} and status in ('PENDING', 'PROCESSING')`;
  return row?.n ?? 0;
}

/** Deletes at most `limit` SENT/FAILED notifications created before the threshold (deleteOldRows); returns how many. */
export function deleteFinishedNotifications(db: Db, args: { threshold: Date; limit: number; resume?: Resume }) {
  return deleteOldRows(
    db,
    {
      table: "notifications",
      column: "created_at",
      old: (q) => q`created_at < ${args.threshold} and status in ('SENT', 'FAILED')`,
    },
    args,
  );
}

/** Deletes at most `limit` processed_events rows older than the threshold, as above; returns how many. */
export function deleteProcessedEvents(db: Db, args: { threshold: Date; limit: number; resume?: Resume }) {
  return deleteOldRows(
    db,
    { table: "processed_events", column: "processed_at", old: (q) => q`processed_at < ${args.threshold}` },
    args,
  );
}

/** Deletes at most `limit` endpoint attempts logged before the threshold, as above; returns how many. */
export function deleteWebhookAttempts(db: Db, args: { threshold: Date; limit: number; resume?: Resume }) {
  return deleteOldRows(db, { table: "webhook_attempts", column: "at", old: (q) => q`at < ${args.threshold}` }, args);
}

/** Deletes at most `limit` SENT/FAILED endpoint deliveries of notifications created before the threshold. */
export function deleteFinishedDeliveries(db: Db, args: { threshold: Date; limit: number; resume?: Resume }) {
  return deleteOldRows(
    db,
    {
      table: "webhook_deliveries",
      column: "created_at",
      old: (q) => q`created_at < ${args.threshold} and status in ('SENT', 'FAILED')`,
    },
    args,
  );
}

/** Deletes at most `limit` finished pushes (SENT, FAILED, EXPIRED) created before the threshold, as above. */
export function deleteFinishedPushes(db: Db, args: { threshold: Date; limit: number; resume?: Resume }) {
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
