// Debug inbox rules: which user ids are acceptable, and the response shape (who may read it: edge/debug-token.ts).
import type { Db } from "../../../shared/db.ts";
import { badRequest, unavailableOr } from "../../../shared/http/errors.ts";
import { isPlainText } from "../../../shared/ids.ts";
import type { InboxResponse } from "./model.ts";
import { findInbox } from "./queries.ts";

export const INBOX_LIMIT = 100;
const USER_ID_MAX = 128;

/**
 * The one id rule of both services (shared/ids.ts), so the inbox and the console find every user the consumer stores
 * notifications for: an id of ideographic or no-break spaces is one the API accepts and the consumer notifies.
 */
export function validUserId(userId: string): string {
  if (!isPlainText(userId, 1, USER_ID_MAX)) {
    throw badRequest(`user_id must be 1 to ${USER_ID_MAX} characters, not blank, without control characters`);
  }
  return userId;
}

export async function readInbox(db: Db, userId: string): Promise<InboxResponse> {
  const rows = await findInbox(db, { userId, limit: INBOX_LIMIT }).catch(unavailableOr);
  return {
    user_id: userId,
    notifications: rows.map((r) => ({
      notification_id: r.notification_id,
      event_id: r.event_id,
      type: r.type,
      status: r.status,
      created_at: r.created_at.toISOString(),
      sent_at: r.sent_at ? r.sent_at.toISOString() : null,
      payload: JSON.parse(r.payload) as Record<string, unknown>,
    })),
  };
}
