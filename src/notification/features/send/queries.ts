// SQL of the send API. A send runs in one transaction: the request's key row first (the key's lock for the rest of the
// transaction), then its notifications, so the key and every recipient's notification commit together or not at all.
import type postgres from "postgres";
import type { Db } from "../../../shared/db.ts";
import { rowSeq, seqCounters } from "../../intake/consumer/seqs.ts";
import type { SendRequest } from "./model.ts";

export type StoredRequest = { requestHash: string; requestId: string; recipients: number };

/**
 * Takes the caller's key for this request: inserted, or taken over when its record has expired. A concurrent request
 * with the same key waits here on the primary key until this transaction ends, then finds its row (no advisory lock).
 * Undefined: the key holds a live record (`findRequest`).
 */
export async function claimRequestKey(
  db: Db,
  input: StoredRequest & { caller: string; idemKey: string; now: Date; expiresAt: Date },
): Promise<boolean> {
  const rows = await db`
    insert into notification_requests as r
      (caller, idem_key, request_hash, request_id, recipients, created_at, expires_at)
    values (${input.caller}, ${input.idemKey}, ${input.requestHash}, ${input.requestId}, ${input.recipients},
            ${input.now}, ${input.expiresAt})
    on conflict (caller, idem_key) do update set
      request_hash = excluded.request_hash, request_id = excluded.request_id, recipients = excluded.recipients,
      created_at = excluded.created_at, expires_at = excluded.expires_at
    where r.expires_at <= ${input.now}
    returning 1`;
  return rows.length === 1;
}

/** The live record of the caller's key. */
export async function findRequest(
  db: Db,
  input: { caller: string; idemKey: string },
): Promise<StoredRequest | undefined> {
  const [row] = await db<{ request_hash: string; request_id: string; recipients: number }[]>`
    select request_hash, request_id, recipients from notification_requests
    where caller = ${input.caller} and idem_key = ${input.idemKey}`;
  return row && { requestHash: row.request_hash, requestId: row.request_id, recipients: row.recipients };
}

type Fragment = postgres.PendingQuery<postgres.Row[]>;
type Sent = { request: SendRequest; requestId: string; now: Date; traceparent: string | null };

/** The recipients as the CTE `todo` (user_id, ord), in the request's order: ids are unique (validation.ts). */
const recipients = (db: Db, userIds: string[]) => db`todo as (
      select user_id, ord from unnest(${userIds}::text[]) with ordinality as t(user_id, ord)
    )`;

/**
 * The CTE `created`: one notification per row of `from` (`t.user_id`, its seq `seq`), PENDING and due at once, its
 * payload the request's with the recipient as user_id, inserted in user_id order.
 */
function created(db: Db, s: Sent, seq: Fragment, from: Fragment): Fragment {
  const { request: r, now } = s;
  const payload = { ...r, user_ids: undefined, request_id: s.requestId };
  return db`created as (
      insert into notifications
        (notification_id, event_id, user_id, type, occurred_at, payload_json, status, attempt_count, next_retry_at,
         created_at, traceparent, seq, collapse_key, expires_at)
      select gen_random_uuid(), ${s.requestId}, t.user_id, ${r.type}, ${now},
             (${JSON.stringify(payload)}::text)::jsonb || jsonb_build_object('user_id', t.user_id), 'PENDING', 0, ${now},
             ${now}, ${s.traceparent}, ${seq}, ${r.collapse_key}, ${r.expires_at}::timestamptz
      ${from}
      order by t.user_id
      on conflict (event_id, user_id) do nothing
      returning 1
    )`;
}

/**
 * Stores one notification per recipient and returns how many it stored. Without a collapse_key, one statement numbers
 * and inserts them as the consumer's does (intake/consumer/seqs.ts). With one, the recipients' counter rows are taken
 * first (`takeSeqs`) and the rows stored by a second statement that first marks read the recipients' unread
 * notifications with that key: its snapshot, taken once the counter rows are locked, holds every older notification
 * of these players, so a concurrent send with the same key for the same player cannot slip past the supersede.
 */
export async function storeSentNotifications(db: Db, input: Sent): Promise<number> {
  const users = input.request.user_ids;
  if (input.request.collapse_key !== null) return storeCollapsing(db, input, await takeSeqs(db, users));
  const [row] = await db<{ stored: number }[]>`
    with ${recipients(db, users)}, ${seqCounters(db)},
    ${created(db, input, rowSeq(db), db`from todo t join counters c using (user_id) window mine as (partition by t.user_id)`)}
    select count(*)::int as stored from created`;
  return row?.stored ?? 0;
}

/** Each recipient's next seq, their counter rows locked until commit. */
async function takeSeqs(db: Db, userIds: string[]): Promise<Map<string, number>> {
  const rows = await db<{ user_id: string; last_seq: string }[]>`
    with ${recipients(db, userIds)}, ${seqCounters(db)}
    select user_id, last_seq from counters`;
  return new Map(rows.map((r) => [r.user_id, Number(r.last_seq)]));
}

async function storeCollapsing(db: Db, input: Sent, seqs: Map<string, number>): Promise<number> {
  const { request: r, now } = input;
  const users = [...seqs.keys()];
  const from = db`from unnest(${users}::text[], ${users.map((u) => seqs.get(u) ?? 0)}::bigint[]) as t(user_id, seq)`;
  const [row] = await db<{ stored: number }[]>`
    with superseded as (
      update notifications n set read_at = ${now}
      where n.collapse_key = ${r.collapse_key} and n.read_at is null and n.user_id = any(${users}::text[])
      returning 1
    ), ${created(db, input, db`t.seq`, from)}
    select (select count(*) from created)::int as stored`;
  return row?.stored ?? 0;
}
