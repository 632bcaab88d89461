// A player's inbox: the list (newest first, keyset-paged by seq), the summary and marking read. Every call takes the
// player's own user_id, from their verified token, never from the request.
import type { Db } from "../../../shared/db.ts";
import { badRequest } from "../../../shared/http/errors.ts";
import { decodeCursor, encodeCursor } from "../../../shared/http/paging.ts";
import { LIST_DEFAULT, LIST_MAX, type ListResponse, type PlayerNotification, type ReadBody } from "./model.ts";
import {
  countUnread,
  lastSeq,
  listPlayerNotifications,
  markReadByIds,
  markReadUpTo,
  type PlayerRow,
} from "./queries.ts";

const SEQ = /^[1-9]\d{0,17}$/;

export function toItem(row: PlayerRow): PlayerNotification {
  return {
    notification_id: row.notification_id,
    seq: Number(row.seq),
    type: row.type,
    occurred_at: row.occurred_at.toISOString(),
    created_at: row.created_at.toISOString(),
    read_at: row.read_at ? row.read_at.toISOString() : null,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
  };
}

export type ListArgs = { limit?: string; cursor?: string; unread?: string };

function parseList(query: ListArgs) {
  const limit = query.limit === undefined ? LIST_DEFAULT : /^\d{1,3}$/.test(query.limit) ? Number(query.limit) : 0;
  if (!(limit >= 1 && limit <= LIST_MAX)) throw badRequest(`limit must be an integer from 1 to ${LIST_MAX}`);
  if (query.unread !== undefined && query.unread !== "true" && query.unread !== "false") {
    throw badRequest("unread must be true or false");
  }
  const [beforeSeq] = decodeCursor(query.cursor, 1) ?? [];
  if (beforeSeq !== undefined && !SEQ.test(beforeSeq)) throw badRequest("cursor is invalid");
  return { limit, beforeSeq, unread: query.unread === "true" };
}

export async function listInbox(db: Db, userId: string, query: ListArgs): Promise<ListResponse> {
  const { limit, beforeSeq, unread } = parseList(query);
  const [rows, unreadCount] = await Promise.all([
    listPlayerNotifications(db, { userId, beforeSeq, unread, limit: limit + 1 }),
    countUnread(db, userId),
  ]);
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return {
    items: items.map(toItem),
    next_cursor: rows.length > limit && last ? encodeCursor([last.seq]) : null,
    unread_count: unreadCount,
  };
}

export async function inboxSummary(db: Db, userId: string) {
  const [unread, last] = await Promise.all([countUnread(db, userId), lastSeq(db, userId)]);
  return { unread_count: unread, last_seq: Number(last) };
}

/** Marks read (idempotent: what is read already stays as it was) and answers the unread count after it. */
export async function markRead(db: Db, userId: string, body: ReadBody, now: Date) {
  if ("notification_ids" in body) await markReadByIds(db, { userId, ids: body.notification_ids, now });
  else await markReadUpTo(db, { userId, seq: String(body.up_to_seq), now });
  return { unread_count: await countUnread(db, userId) };
}
