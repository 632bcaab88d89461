// SQL of the send API. A send runs in one transaction: the request's key row first (the key's lock for the rest of the
// transaction), then its notifications, so the key and every recipient's notification commit together or not at all.
import type { Db } from "../../../shared/db.ts";
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

/**
 * Each recipient's next seq, as the consumer's storing statement takes it (intake/consumer/queries.ts): one counter
 * update per user, in user_id order, so that two transactions never wait for each other's counter rows in a cycle. The
 * rows stay locked until commit: one user's numbers commit in order, and the supersede below sees every older row.
 */
export async function takeSeqs(db: Db, userIds: string[]): Promise<Map<string, number>> {
  const rows = await db<{ user_id: string; last_seq: string }[]>`
    insert into notification_user_seqs as s (user_id, last_seq)
    select id, 1 from unnest(${userIds}::text[]) as t(id) order by id
    on conflict (user_id) do update set last_seq = s.last_seq + 1
    returning s.user_id, s.last_seq`;
  return new Map(rows.map((r) => [r.user_id, Number(r.last_seq)]));
}

/**
 * Stores one notification per recipient, PENDING and due at once, its payload the request's with the recipient as
 * user_id; with a collapse_key, first marks read the recipients' unread notifications with that key. A second
 * statement after `takeSeqs`, so its snapshot holds every older notification of these players (their counter rows
 * are locked): a concurrent send with the same key for the same player cannot slip past the supersede. Returns how
 * many it stored.
 */
export async function storeSentNotifications(
  db: Db,
  input: { request: SendRequest; requestId: string; seqs: Map<string, number>; now: Date; traceparent: string | null },
): Promise<number> {
  const { request: r, now } = input;
  const users = [...input.seqs.keys()];
  const payload = { ...r, user_ids: undefined, request_id: input.requestId };
  const [row] = await db<{ stored: number }[]>`
    with superseded as (
      update notifications n set read_at = ${now}
      where ${r.collapse_key}::text is not null and n.collapse_key = ${r.collapse_key}::text and n.read_at is null
        and n.user_id = any(${users}::text[])
      returning 1
    ), created as (
      insert into notifications
        (notification_id, event_id, user_id, type, occurred_at, payload_json, status, attempt_count, next_retry_at,
         created_at, traceparent, seq, collapse_key, expires_at)
      select gen_random_uuid(), ${input.requestId}, t.user_id, ${r.type}, ${now},
             (${JSON.stringify(payload)}::text)::jsonb || jsonb_build_object('user_id', t.user_id), 'PENDING', 0, ${now}, ${now},
             ${input.traceparent}, t.seq, ${r.collapse_key}, ${r.expires_at}::timestamptz
      from unnest(${users}::text[], ${users.map((u) => input.seqs.get(u) ?? 0)}::bigint[]) as t(user_id, seq)
      order by t.user_id
      on conflict (event_id, user_id) do nothing
      returning 1
    )
    select (select count(*) from created)::int as stored`;
  return row?.stored ?? 0;
}
