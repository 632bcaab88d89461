// SQL of the outbox operator subcommands (docs/operations.md): the runbook's statements, each touching only its rows.
import type { Db } from "../../shared/db.ts";
import { OUTBOX_CHANNEL } from "../work/wakeups.ts";

export type OutboxStats = {
  byStatus: Record<"PENDING" | "IN_FLIGHT" | "PUBLISHED" | "FAILED", number>;
  /** Age in seconds of the oldest event not yet published (PENDING or IN_FLIGHT), null when there is none. */
  oldestUnpublishedAgeSeconds: number | null;
  oldestUnpublishedEventId: string | null;
};

export async function readOutboxStats(db: Db): Promise<OutboxStats> {
  const rows = await db<{ status: keyof OutboxStats["byStatus"]; count: number }[]>`
    select status, count(*)::int as count from outbox_events group by status`;
  const byStatus = { PENDING: 0, IN_FLIGHT: 0, PUBLISHED: 0, FAILED: 0 };
  for (const r of rows) byStatus[r.status] = r.count;
  const [oldest] = await db<{ event_id: string; age: number }[]>`
    select event_id, extract(epoch from now() - created_at)::float8 as age
    from outbox_events
    where status in ('PENDING', 'IN_FLIGHT')
    order by created_at
    limit 1`;
  return {
    byStatus,
    oldestUnpublishedAgeSeconds: oldest ? Math.max(0, oldest.age) : null,
    oldestUnpublishedEventId: oldest?.event_id ?? null,
  };
}

export type RequeuedEvent = {
  event_id: string;
  event_type: string;
  aggregate_key: string;
  previous_attempts: number;
  last_error: string | null;
};

/**
 * FAILED → PENDING with a fresh attempt budget, for one event or (no id) every FAILED event. `last_error` is kept as a
 * record of why it failed; the relay clears it on its next claim.
 */
export async function requeueFailedOutboxEvents(db: Db, options: { eventId?: string }): Promise<RequeuedEvent[]> {
  const only = options.eventId === undefined ? db`` : db`and event_id = ${options.eventId}::uuid`;
  const rows = await db<RequeuedEvent[]>`
    update outbox_events e
    set status = 'PENDING', attempt_count = 0, next_retry_at = null, locked_by = null, locked_at = null,
        lease_until = null
    from (select event_id, attempt_count from outbox_events where status = 'FAILED' ${only} for update) old
    where e.event_id = old.event_id
    returning e.event_id, e.event_type, e.aggregate_key, old.attempt_count as previous_attempts, e.last_error`;
  // Wakes the relay at once (it LISTENs on this channel) instead of at its next poll.
  if (rows.length > 0) await db`select pg_notify(${OUTBOX_CHANNEL}, '')`;
  return [...rows];
}

export async function findOutboxStatus(db: Db, eventId: string): Promise<string | undefined> {
  const [row] = await db<{ status: string }[]>`select status from outbox_events where event_id = ${eventId}::uuid`;
  return row?.status;
}
