// SQL of the debug inbox.
import type { Db } from "../../../shared/db.ts";

export type InboxRow = {
  notification_id: string;
  event_id: string;
  type: string;
  status: "PENDING" | "PROCESSING" | "SENT" | "FAILED";
  created_at: Date;
  sent_at: Date | null;
  payload: string;
};

/** The user's latest notifications, the last stored first (by seq, notifications_user_seq_key). */
export async function findInbox(db: Db, input: { userId: string; limit: number }): Promise<InboxRow[]> {
  return db<InboxRow[]>`
    select notification_id, event_id, type, status, created_at, sent_at, payload_json::text as payload
    from notifications
    where user_id = ${input.userId}
    order by seq desc
    limit ${input.limit}`;
}
