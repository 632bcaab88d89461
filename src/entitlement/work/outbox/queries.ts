// SQL of the outbox relay, one statement per function, handle first. Every finalize is guarded by
// `locked_by = me and status = 'IN_FLIGHT'`, so a relay that lost its lease changes nothing (docs/failure-modes.md).
import type { Db } from "../../../shared/db.ts";
import type { ClaimArgs } from "../scheduler/kind.ts";
import type { OutboxRow } from "./encode.ts";

type ClaimedRecord = {
  event_id: string;
  event_type: string;
  aggregate_key: string;
  payload: unknown;
  attempt_count: number;
  traceparent: string | null;
  subject: string | null;
};

/** A claim of the outbox: what every lease claim takes (scheduler/kind.ts ClaimArgs), and its cursor. */
export type OutboxClaimArgs = ClaimArgs & {
  /**
   * Where new events are looked for from: a chained claim starts at the newest `created_at` of the full batch before
   * it, instead of stepping again over the index entries of every event claimed since the last vacuum. Unset: from
   * the oldest (the relay unsets it at the first claim that is not full, and at least once a second).
   */
  after?: Date;
  /**
   * Whether the claim also looks for IN_FLIGHT rows whose lease ran out (or is missing); default true. Their index
   * keeps an entry for every event claimed since the last vacuum, and PostgreSQL reads them with a bitmap scan, which
   * visits each one's row at every claim and never marks it dead: 0.4–3 ms a claim after 8,000–10,000 events, 3.7 ms in
   * the whole-system bench at 300/s. Such rows come only from a relay that died, and each waits for its lease to end,
   * so the relay looks for them at most once per poll interval (relay.ts), not at every claim. Off, the two branches
   * stay in the statement (one prepared statement either way) behind a parameter that is false, which PostgreSQL
   * checks once before their scans and so never starts them.
   */
  leases?: boolean;
};

/** A claimed batch and the newest `created_at` in it (undefined when it is empty): a chained claim's `after`. */
export type ClaimResult = { claimed: OutboxRow[]; position: Date | undefined };

const toRow = (r: ClaimedRecord): OutboxRow => ({
  eventId: r.event_id,
  eventType: r.event_type,
  aggregateKey: r.aggregate_key,
  payload: r.payload,
  attemptCount: r.attempt_count,
  traceparent: r.traceparent,
  subject: r.subject,
});

/** Claims a batch: markOutboxPublishedAndClaim with nothing to finalize. */
export async function claimOutboxBatch(db: Db, args: OutboxClaimArgs): Promise<OutboxRow[]> {
  return (await claimOutboxBatchAt(db, args)).claimed;
}

/** Claims a batch and says where it ends (a chained claim's `after`). */
export async function claimOutboxBatchAt(db: Db, args: OutboxClaimArgs): Promise<ClaimResult> {
  return markOutboxPublishedAndClaim(db, { lockedBy: args.lockedBy, published: [], claim: args });
}

/**
 * Marks acknowledged events PUBLISHED (as markOutboxPublished) and claims the next batch, in one statement: while
 * events keep coming, a batch costs one round trip instead of a finalize and a claim (docs/benchmarks.md "Pipeline
 * cost"). The claim never takes the rows the statement finalizes, even when their lease ran out meanwhile.
 *
 * The claim takes due PENDING rows and lease-expired IN_FLIGHT rows, oldest first, and counts the claim as an attempt
 * at once: a claim that is never finalized (the relay died) still uses up an attempt (docs/decisions.md). Rows that
 * already used every attempt are left to `failExhaustedOutboxClaims`. The result is sorted explicitly. Each kind of due
 * row is found by its own ordered, limited index scan that locks as it goes (`skip locked`): one `or` over all of them
 * made PostgreSQL read and sort the entire backlog for every batch (docs/benchmarks.md), and picking candidates first
 * and locking them afterwards made concurrent claims (the relay's lanes, relay.ts) pick the same candidates and come
 * back nearly empty. New events use outbox_fresh_idx (migration 002). Each branch is materialized so its limit holds;
 * up to 4 × limit rows are locked and only `limit` are claimed. A lease that ran out and one that is missing (set by
 * hand) are two branches, each a range of outbox_inflight_lease_idx: one `or` of them was a filter, and every claim
 * read the whole index, i.e. every event in flight on any lane (docs/benchmarks.md, "The lease branches").
 * With `after`, new events are looked for from that `created_at` on: the index keeps an entry for every event claimed
 * since the last vacuum, and a scan from the oldest steps over all of them (docs/benchmarks.md, "The relay's claim").
 */
export async function markOutboxPublishedAndClaim(
  db: Db,
  args: { lockedBy: string; published: { eventId: string; publishedAt: Date }[]; claim: OutboxClaimArgs },
): Promise<{ published: string[] } & ClaimResult> {
  const { now, limit, maxAttempts, after, leases = true } = args.claim;
  const ids = args.published.map((p) => p.eventId);
  const times = args.published.map((p) => p.publishedAt.toISOString());
  const rows = await db<ClaimStatementRow[]>`
    with fresh as materialized (
      select event_id, created_at from outbox_events
      where status = 'PENDING' and next_retry_at is null ${after ? db`and created_at >= ${after}` : db``}
      order by created_at limit ${limit}
      for update skip locked
    ), retry_due as materialized (
      select event_id, created_at from outbox_events
      where status = 'PENDING' and next_retry_at <= ${now}
      order by created_at limit ${limit}
      for update skip locked
    ), lease_expired as materialized (
      select event_id, created_at from outbox_events
      where ${leases}::boolean and status = 'IN_FLIGHT' and lease_until <= ${now} and attempt_count < ${maxAttempts}
        and event_id <> all(${ids}::uuid[])
      order by created_at limit ${limit}
      for update skip locked
    ), lease_missing as materialized (
      select event_id, created_at from outbox_events
      where ${leases}::boolean and status = 'IN_FLIGHT' and lease_until is null and attempt_count < ${maxAttempts}
        and event_id <> all(${ids}::uuid[])
      order by created_at limit ${limit}
      for update skip locked
    ), picked as (
      select event_id from (
        select * from fresh union all select * from retry_due
        union all select * from lease_expired union all select * from lease_missing
      ) due
      order by created_at limit ${limit}
    ), claimed as (
      update outbox_events e
      set status = 'IN_FLIGHT', locked_by = ${args.claim.lockedBy}, locked_at = ${now},
          lease_until = ${args.claim.leaseUntil}, attempt_count = e.attempt_count + 1
      from picked
      where e.event_id = picked.event_id
      returning e.event_id, e.event_type, e.aggregate_key, e.payload, e.attempt_count, e.created_at, e.traceparent, e.subject
    ), published as (
      update outbox_events e
      set status = 'PUBLISHED', published_at = u.published_at, next_retry_at = null, last_error = null,
          locked_by = null, locked_at = null, lease_until = null
      from unnest(${ids}::uuid[], ${times}::timestamptz[]) as u(event_id, published_at)
      where e.event_id = u.event_id and e.locked_by = ${args.lockedBy} and e.status = 'IN_FLIGHT'
      returning e.event_id
    )
    select 'claimed' as kind, event_id, event_type, aggregate_key, payload, attempt_count, traceparent, subject, created_at
    from claimed
    union all
    select 'published', event_id, null, null, null, null, null, null, null
    from published
    order by kind, created_at, event_id`;
  return splitClaimRows(rows);
}

type ClaimStatementRow = ClaimedRecord & { kind: "claimed" | "published"; created_at: Date | null };

/** The claim statement's rows as the ids it finalized, the rows it claimed and where the claimed ones end. */
function splitClaimRows(rows: ClaimStatementRow[]): { published: string[] } & ClaimResult {
  const claimed = rows.filter((r) => r.kind === "claimed");
  return {
    published: rows.filter((r) => r.kind === "published").map((r) => r.event_id),
    claimed: claimed.map(toRow),
    position: claimed.at(-1)?.created_at ?? undefined,
  };
}

/** Lease-expired IN_FLIGHT rows whose every attempt was claimed and never finalized: a relay died on each. */
export async function failExhaustedOutboxClaims(db: Db, args: { now: Date; maxAttempts: number }): Promise<string[]> {
  const rows = await db<{ event_id: string }[]>`
    update outbox_events
    set status = 'FAILED', next_retry_at = null, locked_by = null, locked_at = null, lease_until = null,
        last_error = 'lease expired on attempt ' || attempt_count || ': the relay stopped before finalizing'
    where event_id in (
      select event_id from outbox_events
      where status = 'IN_FLIGHT' and (lease_until is null or lease_until <= ${args.now})
        and attempt_count >= ${args.maxAttempts}
      for update skip locked
    )
    returning event_id`;
  return rows.map((r) => r.event_id);
}

/** Marks acknowledged events PUBLISHED, each with its own ack time; returns the ids it changed. */
export async function markOutboxPublished(
  db: Db,
  args: { lockedBy: string; published: { eventId: string; publishedAt: Date }[] },
): Promise<string[]> {
  if (args.published.length === 0) return [];
  const ids = args.published.map((p) => p.eventId);
  const times = args.published.map((p) => p.publishedAt.toISOString());
  const rows = await db<{ event_id: string }[]>`
    update outbox_events e
    set status = 'PUBLISHED', published_at = u.published_at, next_retry_at = null, last_error = null,
        locked_by = null, locked_at = null, lease_until = null
    from unnest(${ids}::uuid[], ${times}::timestamptz[]) as u(event_id, published_at)
    where e.event_id = u.event_id and e.locked_by = ${args.lockedBy} and e.status = 'IN_FLIGHT'
    returning e.event_id`;
  return rows.map((r) => r.event_id);
}

export type OutboxFailure = {
  eventId: string;
  status: "PENDING" | "FAILED";
  attemptCount: number;
  nextRetryAt: Date | null;
  lastError: string;
};

/** Sends failed events back to PENDING (with their retry time) or to FAILED; returns the ids it changed. */
export async function markOutboxFailures(
  db: Db,
  args: { lockedBy: string; failures: OutboxFailure[] },
): Promise<string[]> {
  if (args.failures.length === 0) return [];
  const f = args.failures;
  const rows = await db<{ event_id: string }[]>`
    update outbox_events e
    set status = u.status, attempt_count = u.attempt_count, next_retry_at = u.next_retry_at,
        last_error = u.last_error, locked_by = null, locked_at = null, lease_until = null
    from unnest(
      ${f.map((x) => x.eventId)}::uuid[],
      ${f.map((x) => x.status)}::text[],
      ${f.map((x) => x.attemptCount)}::int[],
      ${f.map((x) => x.nextRetryAt?.toISOString() ?? null)}::timestamptz[],
      ${f.map((x) => x.lastError)}::text[]
    ) as u(event_id, status, attempt_count, next_retry_at, last_error)
    where e.event_id = u.event_id and e.locked_by = ${args.lockedBy} and e.status = 'IN_FLIGHT'
    returning e.event_id`;
  return rows.map((r) => r.event_id);
}

/** The lease heartbeat: pushes the lease of rows this relay still holds; returns how many it extended. */
export async function extendOutboxLease(
  db: Db,
  args: { eventIds: string[]; lockedBy: string; leaseUntil: Date },
): Promise<number> {
  if (args.eventIds.length === 0) return 0;
  const result = await db`
    update outbox_events set lease_until = ${args.leaseUntil}
    where event_id = any(${args.eventIds}::uuid[]) and locked_by = ${args.lockedBy} and status = 'IN_FLIGHT'`;
  return result.count;
}

/**
 * Fresh planner statistics for the claim (see `createOutboxRelay`'s slow-claim check), through migration 010's
 * function: the runtime role may not ANALYZE the table itself.
 */
export async function analyzeOutbox(db: Db): Promise<void> {
  await db`select analyze_outbox_events()`;
}

export async function countFailedOutbox(db: Db): Promise<number> {
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from outbox_events where status = 'FAILED'`;
  return row?.n ?? 0;
}

/**
 * When an idle relay should look again: now when a new event waits (PENDING, no retry time), else the earliest retry
 * time or lease end; undefined when nothing is unfinished. Each branch reads its partial index (outbox_fresh_idx,
 * outbox_retry_idx, outbox_inflight_lease_idx) and stops at its first entry.
 */
export async function nextOutboxDueAt(db: Db, now: Date): Promise<Date | undefined> {
  const [row] = await db<{ at: Date | null }[]>`
    select least(
      (select ${now}::timestamptz from outbox_events where status = 'PENDING' and next_retry_at is null limit 1),
      (select min(next_retry_at) from outbox_events where status = 'PENDING' and next_retry_at is not null),
      (select min(lease_until) from outbox_events where status = 'IN_FLIGHT' and lease_until is not null),
      (select ${now}::timestamptz from outbox_events where status = 'IN_FLIGHT' and lease_until is null limit 1)
    ) as at`;
  return row?.at ?? undefined;
}
