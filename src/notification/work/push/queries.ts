// SQL of the push worker, one statement per function. A claim takes due pushes push service by push service, each at
// most its free slots, so one service's backlog or hang never takes another's turn (the endpoints' claim, with the
// services found by a skip scan of the due index instead of a table of them); every finalize is guarded by the
// in-flight status and locked_by.
import { type Db, unprepared } from "../../../shared/db.ts";
import type { Platform } from "../../features/push/model.ts";
import type { SlotClaim } from "../keyed-slots.ts";

export type ClaimedPush = {
  deviceId: string;
  notificationId: string;
  service: string;
  /** Already counts this attempt: the claim increments it. */
  attemptCount: number;
  platform: Platform;
  endpoint: string | null;
  p256dh: string | null;
  auth: string | null;
  token: string | null;
  /**
   * Whether the push is still wanted when it goes out: the device is still the notification's player's and the player
   * has not turned push off, for everything or for the type, since the notification was stored.
   */
  wanted: boolean;
  /** Null when the notification no longer exists (deleted by retention). */
  notification: { seq: number; type: string; payload: Record<string, unknown>; traceparent: string | null } | null;
};

type ClaimRow = {
  device_id: string;
  notification_id: string;
  service: string;
  attempt_count: number;
  platform: Platform;
  endpoint: string | null;
  p256dh: string | null;
  auth: string | null;
  token: string | null;
  seq: string | null;
  type: string | null;
  payload: string | null;
  traceparent: string | null;
  wanted: boolean | null;
};

const toClaimed = (r: ClaimRow): ClaimedPush => ({
  deviceId: r.device_id,
  notificationId: r.notification_id,
  service: r.service,
  attemptCount: r.attempt_count,
  platform: r.platform,
  endpoint: r.endpoint,
  p256dh: r.p256dh,
  auth: r.auth,
  token: r.token,
  wanted: r.wanted === true,
  notification:
    r.payload === null || r.seq === null
      ? null
      : {
          seq: Number(r.seq),
          type: r.type as string,
          payload: JSON.parse(r.payload) as Record<string, unknown>,
          traceparent: r.traceparent,
        },
});

/**
 * Claims due pushes: PENDING ones whose time came and PROCESSING ones whose lease ended. `free` gives the slots left
 * of services with pushes in flight; every other service gets `perKey`.
 */
export async function claimPushes(db: Db, input: SlotClaim): Promise<ClaimedPush[]> {
  const rows = await unprepared<ClaimRow[]>(db)`
    with recursive services as (
      (select service from push_deliveries where status in ('PENDING', 'PROCESSING') order by service limit 1)
      union all
      select (select d.service from push_deliveries d
              where d.status in ('PENDING', 'PROCESSING') and d.service > s.service order by d.service limit 1)
      from services s where s.service is not null
    ), picked as (
      select p.ctid
      from services s
      left join unnest(${input.free.map((f) => f.key)}::text[], ${input.free.map((f) => f.free)}::int[])
        as f(service, free) on f.service = s.service
      cross join lateral (
        select d.ctid from push_deliveries d
        where d.service = s.service and d.status in ('PENDING', 'PROCESSING') and d.next_attempt_at <= ${input.now}
        order by d.next_attempt_at
        limit coalesce(f.free, ${input.perKey})
        for update skip locked
      ) p
      where s.service is not null and coalesce(f.free, ${input.perKey}) > 0
      limit ${input.limit}
    ), claimed as (
      update push_deliveries d
      set status = 'PROCESSING', locked_by = ${input.lockedBy}, next_attempt_at = ${input.leaseUntil},
          attempt_count = d.attempt_count + 1
      where d.ctid = any(array(select ctid from picked))
      returning d.device_id, d.notification_id, d.service, d.attempt_count
    )
    select c.device_id, c.notification_id, c.service, c.attempt_count, v.platform, v.endpoint, v.p256dh, v.auth, v.token,
           n.seq::text as seq, n.type, n.payload_json::text as payload, n.traceparent,
           v.user_id = n.user_id
             and (p.user_id is null or (p.push and coalesce((p.types -> n.type ->> 'push')::boolean, true))) as wanted
    from claimed c
    join player_devices v on v.device_id = c.device_id
    left join notifications n on n.notification_id = c.notification_id
    left join player_preferences p on p.user_id = n.user_id`;
  return rows.map(toClaimed);
}

export type PushOutcome = {
  deviceId: string;
  notificationId: string;
  /** SKIPPED: no longer wanted (ClaimedPush.wanted), the row is deleted as if it had never been made. */
  status: "SENT" | "FAILED" | "PENDING" | "EXPIRED" | "SKIPPED";
  at: Date;
  nextAttemptAt: Date | null;
  error: string | null;
  statusCode: number | null;
};

/**
 * Finalizes pushes still held by this worker, any number in one statement: a SENT one marks its device's last success,
 * a SKIPPED one is deleted. Returns the pushes that changed (the others' leases were lost).
 */
export async function finalizePushes(
  db: Db,
  input: { lockedBy: string; outcomes: PushOutcome[] },
): Promise<{ deviceId: string; notificationId: string }[]> {
  const o = input.outcomes;
  if (o.length === 0) return [];
  const rows = await unprepared<{ device_id: string; notification_id: string }[]>(db)`
    with o as (
      select * from unnest(
        ${o.map((x) => x.deviceId)}::uuid[], ${o.map((x) => x.notificationId)}::uuid[], ${o.map((x) => x.status)}::text[],
        ${o.map((x) => x.at.toISOString())}::timestamptz[], ${o.map((x) => x.nextAttemptAt?.toISOString() ?? null)}::timestamptz[],
        ${o.map((x) => x.error)}::text[], ${o.map((x) => x.statusCode)}::int[]
      ) as o(device_id, notification_id, status, at, next_attempt_at, error, status_code)
    ), done as (
      update push_deliveries d
      set status = o.status, next_attempt_at = coalesce(o.next_attempt_at, o.at), locked_by = null,
          last_error = o.error, last_status_code = o.status_code,
          sent_at = case when o.status = 'SENT' then o.at else d.sent_at end
      from o
      where d.device_id = o.device_id and d.notification_id = o.notification_id and o.status <> 'SKIPPED'
        and d.status = 'PROCESSING' and d.locked_by = ${input.lockedBy}
      returning d.device_id, d.notification_id, d.status, o.at
    ), dropped as (
      delete from push_deliveries d using o
      where d.device_id = o.device_id and d.notification_id = o.notification_id and o.status = 'SKIPPED'
        and d.status = 'PROCESSING' and d.locked_by = ${input.lockedBy}
      returning d.device_id, d.notification_id
    ), seen as (
      update player_devices v set last_success_at = s.at
      from (select device_id, max(at) as at from done where status = 'SENT' group by device_id) s
      where v.device_id = s.device_id and (v.last_success_at is null or v.last_success_at < s.at)
    )
    select device_id, notification_id from done
    union all
    select device_id, notification_id from dropped`;
  return rows.map((r) => ({ deviceId: r.device_id, notificationId: r.notification_id }));
}

/** Deletes devices their push service called gone (their pushes go with them). */
export async function deleteGoneDevices(db: Db, deviceIds: string[]): Promise<void> {
  if (deviceIds.length === 0) return;
  await db`delete from player_devices where device_id = any(${deviceIds}::uuid[])`;
}

/** When the next push falls due (a retry or a lease's end); null when none is waiting. */
export async function nextPushDueAt(db: Db): Promise<Date | null> {
  const [row] = await db<{ at: Date | null }[]>`
    select min(next_attempt_at) as at from push_deliveries where status in ('PENDING', 'PROCESSING')`;
  return row?.at ?? null;
}
