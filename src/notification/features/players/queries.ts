// SQL of the players' inbox and streams. Every statement names the player's user_id: a player's requests can reach
// no other user's rows.
import type { Db } from "../../../shared/db.ts";

export type PlayerRow = {
  notification_id: string;
  seq: string;
  type: string;
  occurred_at: Date;
  created_at: Date;
  read_at: Date | null;
  payload: string;
};

const COLUMNS = (db: Db) =>
  db`notification_id, seq::text as seq, type, occurred_at, created_at, read_at, payload_json::text as payload`;

/** Newest first, before `beforeSeq` when given, unread only when asked; `limit` rows at most. */
export async function listPlayerNotifications(
  db: Db,
  input: { userId: string; beforeSeq: string | undefined; unread: boolean; limit: number },
): Promise<PlayerRow[]> {
  return db<PlayerRow[]>`
    select ${COLUMNS(db)} from notifications
    where user_id = ${input.userId}
      ${input.beforeSeq === undefined ? db`` : db`and seq < ${input.beforeSeq}::bigint`}
      ${input.unread ? db`and read_at is null` : db``}
    order by notifications.seq desc
    limit ${input.limit}`;
}

/** The player's notifications after `afterSeq`, in seq order; `limit` rows at most. */
export async function readPlayerNotificationsAfter(
  db: Db,
  input: { userId: string; afterSeq: string; limit: number },
): Promise<PlayerRow[]> {
  return db<PlayerRow[]>`
    select ${COLUMNS(db)} from notifications
    where user_id = ${input.userId} and seq > ${input.afterSeq}::bigint
    order by notifications.seq
    limit ${input.limit}`;
}

/**
 * For each ask, its player's notifications after its seq, in seq order, `limit` rows at most: one statement for many
 * streams (batch-read.ts), each row found through notifications_user_seq_key as the single read finds it.
 */
export async function readPlayersAfter(
  db: Db,
  asks: { userId: string; afterSeq: string }[],
  limit: number,
): Promise<PlayerRow[][]> {
  const rows = await db<(PlayerRow & { ord: string })[]>`
    select a.ord, n.* from unnest(${asks.map((a) => a.userId)}::text[], ${asks.map((a) => a.afterSeq)}::bigint[])
      with ordinality as a(user_id, after_seq, ord)
    cross join lateral (
      select ${COLUMNS(db)} from notifications
      where notifications.user_id = a.user_id and notifications.seq > a.after_seq
      order by notifications.seq
      limit ${limit}
    ) n
    order by a.ord, n.seq::bigint`;
  const out: PlayerRow[][] = asks.map(() => []);
  for (const { ord, ...row } of rows) out[Number(ord) - 1]?.push(row);
  return out;
}

export async function countUnread(db: Db, userId: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from notifications where user_id = ${userId} and read_at is null`;
  return row?.n ?? 0;
}

/** The last seq given to the player (0 when none): rows retention deleted count too. */
export async function lastSeq(db: Db, userId: string): Promise<string> {
  const [row] = await db<{ last_seq: string }[]>`
    select last_seq::text as last_seq from notification_user_seqs where user_id = ${userId}`;
  return row?.last_seq ?? "0";
}

/** The last seq of each of these players that has one. */
export async function lastSeqs(db: Db, userIds: string[]): Promise<Map<string, string>> {
  if (userIds.length === 0) return new Map();
  const rows = await db<{ user_id: string; last_seq: string }[]>`
    select user_id, last_seq::text as last_seq from notification_user_seqs where user_id = any(${userIds}::text[])`;
  return new Map(rows.map((r) => [r.user_id, r.last_seq]));
}

/** Marks the player's unread notifications among `ids` read; ids of other users match nothing, like unknown ids. */
export async function markReadByIds(db: Db, input: { userId: string; ids: string[]; now: Date }): Promise<void> {
  await db`
    update notifications set read_at = ${input.now}
    where user_id = ${input.userId} and notification_id = any(${input.ids}::uuid[]) and read_at is null`;
}

/** Marks every unread notification of the player up to and including `seq` read. */
export async function markReadUpTo(db: Db, input: { userId: string; seq: string; now: Date }): Promise<void> {
  await db`
    update notifications set read_at = ${input.now}
    where user_id = ${input.userId} and seq <= ${input.seq}::bigint and read_at is null`;
}
