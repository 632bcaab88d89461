// SQL of the endpoint delivery worker, one statement per function. A claim takes due deliveries endpoint by endpoint,
// each endpoint at most its free slots, so one endpoint's backlog never takes another's turn; every finalize is guarded
// by the in-flight status and locked_by, as the notifications' are (docs/failure-modes.md).
import { type Db, unprepared } from "../../../shared/db.ts";
import type { OlderSecret } from "../../features/endpoints/queries.ts";
import type { SlotClaim } from "../keyed-slots.ts";

export type ClaimedDelivery = {
  endpointId: string;
  notificationId: string;
  /** Already counts this attempt: the claim increments it. */
  attemptCount: number;
  url: string;
  secretCiphertext: string;
  previousSecretCiphertext: string | null;
  previousSecretUntil: Date | null;
  olderSecrets: { sealed: string; until: Date }[];
  /** Null when the notification no longer exists (deleted by retention). */
  notification: {
    eventId: string;
    userId: string;
    type: string;
    occurredAt: Date;
    payload: Record<string, unknown>;
    traceparent: string | null;
    /** A sent notification's end: not delivered after it. */
    expiresAt: Date | null;
  } | null;
};

type ClaimRow = {
  endpoint_id: string;
  notification_id: string;
  attempt_count: number;
  url: string;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_until: Date | null;
  older_secrets: OlderSecret[];
  event_id: string | null;
  user_id: string;
  type: string;
  occurred_at: Date;
  payload: string | null;
  traceparent: string | null;
  expires_at: Date | null;
};

function toClaimed(r: ClaimRow): ClaimedDelivery {
  return {
    endpointId: r.endpoint_id,
    notificationId: r.notification_id,
    attemptCount: r.attempt_count,
    url: r.url,
    secretCiphertext: r.secret_ciphertext,
    previousSecretCiphertext: r.previous_secret_ciphertext,
    previousSecretUntil: r.previous_secret_until,
    olderSecrets: r.older_secrets.map((o) => ({ sealed: o.sealed, until: new Date(o.until) })),
    notification:
      r.event_id === null || r.payload === null
        ? null
        : {
            eventId: r.event_id,
            userId: r.user_id,
            type: r.type,
            occurredAt: r.occurred_at,
            payload: JSON.parse(r.payload) as Record<string, unknown>,
            traceparent: r.traceparent,
            expiresAt: r.expires_at,
          },
  };
}

/**
 * Claims due deliveries of enabled endpoints: PENDING ones whose time came and PROCESSING ones whose lease ended (a
 * claim moves next_attempt_at to the lease's end). `free` gives the slots left of endpoints with deliveries in flight;
 * every other endpoint gets `perKey`. The rows picked and locked are updated by their ctid (a TID scan, the row
 * locked cannot move before the update): a join on the key let the planner hash the whole table, every claim costing
 * as much as the backlog was long.
 */
export async function claimDeliveries(db: Db, input: SlotClaim): Promise<ClaimedDelivery[]> {
  const rows = await unprepared<ClaimRow[]>(db)`
    with picked as (
      select d.ctid
      from webhook_endpoints e
      left join unnest(${input.free.map((f) => f.key)}::uuid[], ${input.free.map((f) => f.free)}::int[])
        as f(endpoint_id, free) on f.endpoint_id = e.endpoint_id
      cross join lateral (
        select d.ctid from webhook_deliveries d
        where d.endpoint_id = e.endpoint_id and d.status in ('PENDING', 'PROCESSING') and d.next_attempt_at <= ${input.now}
        order by d.next_attempt_at
        limit coalesce(f.free, ${input.perKey})
        for update skip locked
      ) d
      where e.enabled and coalesce(f.free, ${input.perKey}) > 0
      limit ${input.limit}
    ), claimed as (
      update webhook_deliveries d
      set status = 'PROCESSING', locked_by = ${input.lockedBy}, next_attempt_at = ${input.leaseUntil},
          attempt_count = d.attempt_count + 1
      where d.ctid = any(array(select ctid from picked))
      returning d.endpoint_id, d.notification_id, d.attempt_count
    )
    select c.endpoint_id, c.notification_id, c.attempt_count, e.url, e.secret_ciphertext, e.previous_secret_ciphertext,
           e.previous_secret_until, e.older_secrets, n.event_id, n.user_id, n.type, n.occurred_at, n.payload_json::text as payload,
           n.traceparent, n.expires_at
    from claimed c
    join webhook_endpoints e on e.endpoint_id = c.endpoint_id
    left join notifications n on n.notification_id = c.notification_id`;
  return rows.map(toClaimed);
}

/** The end of one attempt: SENT, FAILED, or PENDING again at `nextAttemptAt`; `durationMs` null when none was made. */
export type DeliveryOutcome = {
  endpointId: string;
  notificationId: string;
  status: "SENT" | "FAILED" | "PENDING";
  attempt: number;
  at: Date;
  nextAttemptAt: Date | null;
  error: string | null;
  statusCode: number | null;
  durationMs: number | null;
  excerpt: string | null;
  /** Whether the outcome says something about the endpoint (its run of failures, auto-disable). */
  endpointFault: boolean;
  /** Ended unsent past the notification's expires_at: SENT with expired_at, sent_at left null (migration 013). */
  expired?: boolean;
};

/**
 * Finalizes many deliveries of one worker in one statement: each delivery still held, its attempt logged, and each
 * endpoint's run of failures started (its first failure) or ended (any success). Returns the deliveries changed.
 * "Still held" is status PROCESSING (the check constraint leaves no other value) and locked_by, spelled as a `not in`:
 * `status = 'PROCESSING'` would let the planner look each delivery up in the partial due index, every due delivery
 * of its endpoint scanned per row, instead of by its primary key.
 */
export async function finalizeDeliveries(
  db: Db,
  input: { lockedBy: string; outcomes: DeliveryOutcome[] },
): Promise<{ endpointId: string; notificationId: string }[]> {
  const o = input.outcomes;
  if (o.length === 0) return [];
  const rows = await unprepared<{ endpoint_id: string; notification_id: string }[]>(db)`
    with o as (
      select * from unnest(
        ${o.map((x) => x.endpointId)}::uuid[], ${o.map((x) => x.notificationId)}::uuid[],
        ${o.map((x) => x.status)}::text[], ${o.map((x) => x.attempt)}::int[],
        ${o.map((x) => x.at.toISOString())}::timestamptz[],
        ${o.map((x) => x.nextAttemptAt?.toISOString() ?? null)}::timestamptz[], ${o.map((x) => x.error)}::text[],
        ${o.map((x) => x.statusCode)}::int[], ${o.map((x) => x.durationMs)}::int[], ${o.map((x) => x.excerpt)}::text[],
        ${o.map((x) => String(x.endpointFault))}::text[], ${o.map((x) => String(x.expired === true))}::text[]
      ) as o(endpoint_id, notification_id, status, attempt, at, next_attempt_at, error, status_code, duration_ms, excerpt,
             endpoint_fault, expired)
    ), done as (
      update webhook_deliveries d
      set status = o.status, next_attempt_at = coalesce(o.next_attempt_at, o.at), locked_by = null,
          last_error = o.error, last_status_code = o.status_code,
          sent_at = case when o.status = 'SENT' and not o.expired::boolean then o.at else d.sent_at end,
          expired_at = case when o.expired::boolean then o.at else d.expired_at end
      from o
      where d.endpoint_id = o.endpoint_id and d.notification_id = o.notification_id
        and d.status not in ('PENDING', 'SENT', 'FAILED') and d.locked_by = ${input.lockedBy}
      returning d.endpoint_id, d.notification_id
    ), logged as (
      insert into webhook_attempts
        (endpoint_id, notification_id, attempt, at, status_code, duration_ms, error, response_excerpt)
      select o.endpoint_id, o.notification_id, o.attempt, o.at, o.status_code, o.duration_ms, o.error, o.excerpt
      from o join done on done.endpoint_id = o.endpoint_id and done.notification_id = o.notification_id
      where o.duration_ms is not null
    ), health as (
      select o.endpoint_id, bool_or(o.status = 'SENT') as ok, min(o.at) as first_at
      from o join done on done.endpoint_id = o.endpoint_id and done.notification_id = o.notification_id
      where (o.status = 'SENT' and not o.expired::boolean) or o.endpoint_fault::boolean
      group by o.endpoint_id
    ), marked as (
      update webhook_endpoints e
      set failing_since = case when health.ok then null else health.first_at end
      from health
      where e.endpoint_id = health.endpoint_id
        and ((health.ok and e.failing_since is not null) or (not health.ok and e.failing_since is null))
    )
    select endpoint_id, notification_id from done`;
  return rows.map((r) => ({ endpointId: r.endpoint_id, notificationId: r.notification_id }));
}

/** Disables the endpoints among `endpointIds` failing since before `threshold`; returns those it disabled. */
export async function disableFailingEndpoints(
  db: Db,
  input: { endpointIds: string[]; threshold: Date; now: Date; reason: string },
): Promise<{ endpointId: string; failingSince: Date }[]> {
  const rows = await db<{ endpoint_id: string; failing_since: Date }[]>`
    update webhook_endpoints
    set enabled = false, disabled_reason = ${input.reason}, updated_at = ${input.now}
    where endpoint_id = any(${input.endpointIds}::uuid[]) and enabled and failing_since <= ${input.threshold}
    returning endpoint_id, failing_since`;
  return rows.map((r) => ({ endpointId: r.endpoint_id, failingSince: r.failing_since }));
}

/**
 * What an idle worker looks at, in one statement: when the next delivery falls due (a retry or a lease's end; null
 * when none is waiting), and whether any endpoint is enabled (none: stored notifications fan out to nobody).
 */
export async function lookWhileIdle(db: Db): Promise<{ nextDueAt: Date | null; anyEnabled: boolean }> {
  const [row] = await db<{ at: Date | null; any_enabled: boolean }[]>`
    select (select min(d.next_attempt_at) from webhook_deliveries d
            join webhook_endpoints e on e.endpoint_id = d.endpoint_id and e.enabled
            where d.status in ('PENDING', 'PROCESSING')) as at,
           exists (select from webhook_endpoints where enabled) as any_enabled`;
  return { nextDueAt: row?.at ?? null, anyEnabled: row?.any_enabled ?? true };
}
