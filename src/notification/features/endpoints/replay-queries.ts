// SQL of an endpoint's attempts log and of a replay.
import type { Db } from "../../../shared/db.ts";

export type AttemptRow = {
  attempt_id: string;
  notification_id: string;
  attempt: number;
  at: Date;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_excerpt: string | null;
};

/**
 * Newest first, before the cursor's attempt id. The id is read as text (a bigint beyond 2^53 stays exact), so the
 * order names the table's column: a bare `attempt_id` in ORDER BY binds the text output column, and "9" sorts after
 * "10".
 */
export async function listAttempts(
  db: Db,
  input: { endpointId: string; limit: number; before?: string },
): Promise<AttemptRow[]> {
  const before = input.before === undefined ? db`` : db`and attempt_id < ${input.before}::bigint`;
  return db<AttemptRow[]>`
    select attempt_id::text as attempt_id, notification_id, attempt, at, status_code, duration_ms, error, response_excerpt
    from webhook_attempts
    where endpoint_id = ${input.endpointId} ${before}
    order by webhook_attempts.attempt_id desc limit ${input.limit}`;
}

export type ReplayCounts = { notifications: number; queued: number };

/**
 * Makes every notification of the endpoint's types created in [since, until) due again for the endpoint (only those
 * whose delivery to it ended FAILED when `onlyFailed`), keeping its id, which is the webhook-id. A delivery still
 * PENDING or in flight is left as it is, and so is one that the same replay (`replayKey`: the request's window and
 * filter) queued after `repeatAfter`, even when it has been sent since: a replay asked for twice (a retried call)
 * queues each notification once, however fast the first was sent.
 * The window is read through the two partial indexes on created_at (finished and unfinished notifications).
 */
export async function replayWindow(
  db: Db,
  input: {
    endpointId: string;
    eventTypes: string[] | null;
    since: Date;
    until: Date;
    onlyFailed: boolean;
    replayId: string;
    replayKey: string;
    now: Date;
    repeatAfter: Date;
  },
): Promise<ReplayCounts> {
  const failedOnly = input.onlyFailed
    ? db`and exists (select from webhook_deliveries d where d.endpoint_id = ${input.endpointId}
           and d.notification_id = n.notification_id and d.status = 'FAILED')`
    : db``;
  const [row] = await db<ReplayCounts[]>`
    with picked as (
      select n.notification_id, n.created_at from notifications n
      where (n.status in ('SENT', 'FAILED') or n.status in ('PENDING', 'PROCESSING'))
        and n.created_at >= ${input.since} and n.created_at < ${input.until}
        and (${input.eventTypes}::text[] is null or n.type = any(${input.eventTypes}::text[]))
        ${failedOnly}
    ), queued as (
      insert into webhook_deliveries
        (endpoint_id, notification_id, status, next_attempt_at, created_at, replay_id, replay_key, replayed_at)
      select ${input.endpointId}, notification_id, 'PENDING', ${input.now}, created_at, ${input.replayId},
             ${input.replayKey}, ${input.now}
      from picked
      on conflict (endpoint_id, notification_id) do update
      set status = 'PENDING', attempt_count = 0, next_attempt_at = excluded.next_attempt_at, locked_by = null,
          replay_id = excluded.replay_id, replay_key = excluded.replay_key, replayed_at = excluded.replayed_at
      where webhook_deliveries.status in ('SENT', 'FAILED')
        and not (webhook_deliveries.replay_key is not distinct from excluded.replay_key
                 and webhook_deliveries.replayed_at > ${input.repeatAfter})
      returning 1
    )
    select (select count(*) from picked)::int as notifications, (select count(*) from queued)::int as queued`;
  return row ?? { notifications: 0, queued: 0 };
}
