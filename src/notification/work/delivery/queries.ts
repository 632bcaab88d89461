// SQL of the delivery worker, one statement per function. Every finalize is guarded by the in-flight status and
// locked_by, so a worker that lost its lease changes nothing (docs/failure-modes.md).
import type { Db } from "../../../shared/db.ts";
import type { Delivery } from "../channels/sender.ts";

/** What the channel is sent, and what the worker keeps to finalize it. */
export type ClaimedNotification = Delivery & {
  /** Already counts this attempt: the claim increments it (docs/decisions.md). */
  attemptCount: number;
  createdAt: Date;
  /** The consume span's W3C trace context (null for rows from before tracing). */
  traceparent?: string | null;
  /** A sent notification's end: not delivered after it (null: none). */
  expiresAt?: Date | null;
};

/** The channel a sleeping delivery worker LISTENs on: NOTIFY it (after the commit) when rows become due elsewhere. */
export const DELIVERY_CHANNEL = "notification_due";

type ClaimRow = {
  notification_id: string;
  event_id: string;
  user_id: string;
  type: string;
  occurred_at: Date;
  payload: string;
  attempt_count: number;
  created_at: Date;
  traceparent: string | null;
  expires_at: Date | null;
};

/**
 * Claims due PENDING rows and PROCESSING rows whose lease expired, oldest first. Sorted explicitly: UPDATE … RETURNING
 * keeps no order. One branch per kind of due row, each a range scan of its own partial index (migration 007): one OR
 * over all of them walked every PENDING row not due yet (docs/benchmarks.md). A branch takes its rows in its index's
 * order (the longest overdue retries and leases first), so even a generic plan cannot walk created_at instead; each is
 * materialized so its limit holds; up to 3 × limit rows are locked and only `limit` claimed, oldest created first.
 */
export async function claimNotifications(
  db: Db,
  input: { limit: number; now: Date; leaseUntil: Date; lockedBy: string },
): Promise<ClaimedNotification[]> {
  const rows = await db<ClaimRow[]>`
    with fresh as materialized (
      select notification_id, created_at from notifications
      where status = 'PENDING' and next_retry_at is null
      order by created_at limit ${input.limit}
      for update skip locked
    ), retry_due as materialized (
      select notification_id, created_at from notifications
      where status = 'PENDING' and next_retry_at is not null and next_retry_at <= ${input.now}
      order by next_retry_at limit ${input.limit}
      for update skip locked
    ), lease_expired as materialized (
      select notification_id, created_at from notifications
      where status = 'PROCESSING' and (lease_until is null or lease_until <= ${input.now})
      order by lease_until limit ${input.limit}
      for update skip locked
    ), picked as (
      select notification_id from (
        select * from fresh union all select * from retry_due union all select * from lease_expired
      ) due
      order by created_at limit ${input.limit}
    ), claimed as (
      update notifications n
      set status = 'PROCESSING', locked_by = ${input.lockedBy}, locked_at = ${input.now},
          lease_until = ${input.leaseUntil}, attempt_count = n.attempt_count + 1
      from picked
      where n.notification_id = picked.notification_id
      returning n.notification_id, n.event_id, n.user_id, n.type, n.occurred_at, n.payload_json::text as payload,
                n.attempt_count, n.created_at, n.traceparent, n.expires_at
    )
    select * from claimed order by created_at, notification_id`;
  return rows.map((r) => ({
    notificationId: r.notification_id,
    eventId: r.event_id,
    userId: r.user_id,
    type: r.type,
    occurredAt: r.occurred_at,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    attemptCount: r.attempt_count,
    createdAt: r.created_at,
    traceparent: r.traceparent,
    expiresAt: r.expires_at,
  }));
}

type Guard = { notificationId: string; lockedBy: string };

/**
 * Ends a claimed notification found past its expires_at without sending it: SENT (final for every release) with
 * expired_at set and sent_at null, so it is neither retried nor parked, and tells itself apart from a sent one.
 */
export async function markExpired(db: Db, input: Guard & { expiredAt: Date }): Promise<number> {
  const result = await db`
    update notifications
    set status = 'SENT', expired_at = ${input.expiredAt}, sent_at = null, next_retry_at = null, last_error = null,
        locked_by = null, locked_at = null, lease_until = null
    where notification_id = ${input.notificationId} and status = 'PROCESSING' and locked_by = ${input.lockedBy}`;
  return result.count;
}

export async function markSent(db: Db, input: Guard & { sentAt: Date }): Promise<number> {
  const result = await db`
    update notifications
    set status = 'SENT', sent_at = ${input.sentAt}, next_retry_at = null, last_error = null,
        locked_by = null, locked_at = null, lease_until = null
    where notification_id = ${input.notificationId} and status = 'PROCESSING' and locked_by = ${input.lockedBy}`;
  return result.count;
}

/** markSent for many notifications of one worker, each with its own send time; returns the ids it changed. */
export async function markSentMany(
  db: Db,
  input: { lockedBy: string; sent: { notificationId: string; sentAt: Date }[] },
): Promise<string[]> {
  if (input.sent.length === 0) return [];
  const rows = await db<{ notification_id: string }[]>`
    update notifications n
    set status = 'SENT', sent_at = u.sent_at, next_retry_at = null, last_error = null,
        locked_by = null, locked_at = null, lease_until = null
    from unnest(
      ${input.sent.map((s) => s.notificationId)}::uuid[],
      ${input.sent.map((s) => s.sentAt.toISOString())}::timestamptz[]
    ) as u(notification_id, sent_at)
    where n.notification_id = u.notification_id and n.status = 'PROCESSING' and n.locked_by = ${input.lockedBy}
    returning n.notification_id`;
  return rows.map((r) => r.notification_id);
}

export async function markRetry(db: Db, input: Guard & { nextRetryAt: Date; error: string }): Promise<number> {
  const result = await db`
    update notifications
    set status = 'PENDING', next_retry_at = ${input.nextRetryAt}, last_error = ${input.error},
        locked_by = null, locked_at = null, lease_until = null
    where notification_id = ${input.notificationId} and status = 'PROCESSING' and locked_by = ${input.lockedBy}`;
  return result.count;
}

export async function markFailed(db: Db, input: Guard & { attemptCount: number; error: string }): Promise<number> {
  const result = await db`
    update notifications
    set status = 'FAILED', attempt_count = ${input.attemptCount}, next_retry_at = null, last_error = ${input.error},
        locked_by = null, locked_at = null, lease_until = null
    where notification_id = ${input.notificationId} and status = 'PROCESSING' and locked_by = ${input.lockedBy}`;
  return result.count;
}

/** Copies the notification into the DLQ; a second copy of the same notification is ignored. */
export async function insertNotificationDlq(
  db: Db,
  input: { notificationId: string; error: string; now: Date },
): Promise<number> {
  const result = await db`
    insert into notification_dlq (dlq_id, notification_id, event_id, payload_json, error_message, created_at)
    select gen_random_uuid(), notification_id, event_id, payload_json, ${input.error}, ${input.now}
    from notifications where notification_id = ${input.notificationId}
    on conflict (notification_id) do nothing`;
  return result.count;
}

/**
 * When the next row a claim would take falls due: the earliest scheduled retry or running lease (null: none). Fresh
 * PENDING rows are not counted, the claim takes them at once. Two top-1 scans of the claim's partial indexes.
 */
export async function nextDueAt(db: Db): Promise<Date | null> {
  const [row] = await db<{ at: Date | null }[]>`
    select least(
      (select min(next_retry_at) from notifications where status = 'PENDING' and next_retry_at is not null),
      (select min(lease_until) from notifications where status = 'PROCESSING')
    ) as at`;
  return row?.at ?? null;
}

/** Rows a claim could take right now (the claim's own predicate). */
export async function countBacklog(db: Db, now: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from notifications
    where (status = 'PENDING' and (next_retry_at is null or next_retry_at <= ${now}))
       or (status = 'PROCESSING' and (lease_until is null or lease_until <= ${now}))`;
  return row?.n ?? 0;
}
