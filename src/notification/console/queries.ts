// SQL only the console reads: a user's notifications with their delivery state.
import type { Db } from "../../shared/db.ts";

export type UserNotification = {
  notification_id: string;
  event_id: string;
  type: string;
  /** The item of an entitlement notification; null for the other kinds. */
  stock_keeping_unit: string | null;
  status: "PENDING" | "PROCESSING" | "SENT" | "FAILED";
  attempt_count: number;
  last_error: string | null;
  next_retry_at: Date | null;
  created_at: Date;
  sent_at: Date | null;
};

/** The user's latest notifications, the last stored first (by seq: the debug inbox's order and index). */
export async function listUserNotifications(
  db: Db,
  args: { userId: string; limit: number },
): Promise<UserNotification[]> {
  return db<UserNotification[]>`
    select notification_id, event_id, type, payload_json ->> 'stock_keeping_unit' as stock_keeping_unit, status,
           attempt_count, last_error, next_retry_at, created_at, sent_at
    from notifications
    where user_id = ${args.userId}
    order by seq desc
    limit ${args.limit}`;
}
