// One relay batch: claim, encode, publish everything at once, then finalize with one statement for the successes and
// one for the failures. A batch never throws for a publish failure; it throws only when the database fails, and then
// the claimed rows simply wait for their lease to expire. The claim is its own step so that the relay loop can start
// more lanes as soon as a claim comes back full (relay.ts).
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { EncodedEvent, OutboxRow } from "./encode.ts";
import { loadEncoder } from "./encoder.ts";
import { withLeaseHeartbeat } from "./heartbeat.ts";
import type { OutboxMetrics } from "./metrics.ts";
import { planFailure, planRelease, type RelaySettings } from "./policy.ts";
import { type Publisher, type PublishOutcome, publishEvents } from "./publisher.ts";
import {
  claimOutboxBatchAt,
  failExhaustedOutboxClaims,
  markOutboxFailures,
  markOutboxPublished,
  markOutboxPublishedAndClaim,
  type OutboxClaimArgs,
  type OutboxFailure,
} from "./queries.ts";

export type RelayDeps = {
  sql: Sql;
  js: Publisher;
  log: Logger;
  now: Clock;
  metrics: OutboxMetrics;
  settings: RelaySettings;
  /** The locked_by of this relay (src/shared/runtime.ts workerId). */
  lockedBy: string;
  /** False while NATS is disconnected: failures then are the outage's, and do not use up attempts. */
  isConnected: () => boolean;
  random?: () => number;
};

export type BatchReport = { claimed: number; published: number; retried: number; failed: number; lost: number };

/**
 * A claimed batch: the rows are this relay's (IN_FLIGHT, leased) until `publishClaimedBatch` finalizes them. `ms`: how
 * long the statement that claimed it took (for the planner-statistics check, statistics.ts).
 */
export type Claim = { rows: OutboxRow[]; claimedAt: Date; ms: number; position: Date | undefined };

type Encoded = { row: OutboxRow; event: EncodedEvent };
type Acked = Extract<PublishOutcome, { ok: true }>;

const LEASE_LOST = "outbox lease lost before finalizing; another relay owns those events";

async function encodeAll(rows: OutboxRow[], deps: RelayDeps, now: Date) {
  const { encodeOutboxEvent } = await loadEncoder();
  const encoded: Encoded[] = [];
  const poison: OutboxFailure[] = [];
  for (const row of rows) {
    try {
      encoded.push({ row, event: encodeOutboxEvent(row) });
    } catch (error) {
      poison.push(planFailure(deps.settings, row, error, now, { permanent: true }));
    }
  }
  return { encoded, poison };
}

function claimArgs(deps: RelayDeps, claimedAt: Date, limit: number, next: Omit<NextClaim, "size">): OutboxClaimArgs {
  const { settings } = deps;
  return {
    now: claimedAt,
    leaseUntil: new Date(claimedAt.getTime() + settings.leaseMs),
    lockedBy: deps.lockedBy,
    limit,
    maxAttempts: settings.maxAttempts,
    after: next.after,
    leases: next.leases,
  };
}

/**
 * Claims one batch of at most `limit` events (default: the configured batch size); with `leases` false it leaves
 * out the rows whose lease ran out (OutboxClaimArgs.leases).
 */
export async function claimBatch(deps: RelayDeps, limit = deps.settings.batchSize, leases = true): Promise<Claim> {
  const claimedAt = deps.now();
  const started = performance.now();
  const { claimed, position } = await claimOutboxBatchAt(deps.sql, claimArgs(deps, claimedAt, limit, { leases }));
  return { rows: claimed, claimedAt, ms: performance.now() - started, position };
}

/** An acknowledged event's PUBLISHED mark, which the relay may send later with others' (`NextClaim.record`). */
export type PublishedMark = { eventId: string; publishedAt: Date };

/**
 * The next claim chained to a finalize: its size (0: none), where it looks for new events from, and whether it also
 * looks for rows whose lease ran out (default true). With `record` and no next claim, the acknowledged events are not
 * marked by the finalize but handed to it, which marks them PUBLISHED later, in a statement shared with other batches'
 * (relay.ts); it resolves true when the row was marked, false when the lease was lost.
 */
export type NextClaim = {
  size: number;
  after?: Date;
  leases?: boolean;
  record?: (mark: PublishedMark) => Promise<boolean>;
};

/**
 * Publishes a claimed batch and finalizes it, keeping its lease alive meanwhile. With `claimNext.size` the finalize
 * also claims the next batch, in the same statement, and returns it as `next`.
 */
export async function publishClaimedBatch(
  deps: RelayDeps,
  rows: OutboxRow[],
  claimedAt: Date,
  claimNext: NextClaim = { size: 0 },
): Promise<BatchReport & { next?: Claim }> {
  if (rows.length === 0) return { claimed: 0, published: 0, retried: 0, failed: 0, lost: 0 };
  return withLeaseHeartbeat(deps, rows, async () => {
    const { encoded, poison } = await encodeAll(rows, deps, claimedAt);
    for (const { event } of encoded) deps.metrics.observeBacklogAge(event.occurredAt, claimedAt);
    const outcomes = await publishEvents(deps.js, {
      subject: deps.settings.subject,
      events: encoded.map((e) => e.event),
      now: deps.now,
    });
    return finalize(deps, rows, outcomes, poison, claimNext);
  });
}

export async function relayOutboxBatch(deps: RelayDeps): Promise<BatchReport> {
  const { rows, claimedAt } = await claimBatch(deps);
  return publishClaimedBatch(deps, rows, claimedAt);
}

/** Claims that used every attempt without being finalized (their relays died) become FAILED. */
export async function failExhaustedClaims(deps: RelayDeps): Promise<void> {
  const failed = await failExhaustedOutboxClaims(deps.sql, { now: deps.now(), maxAttempts: deps.settings.maxAttempts });
  if (failed.length) {
    deps.metrics.countPublish("failed", failed.length);
    deps.log.error({ event_ids: failed }, "outbox events FAILED: every attempt was claimed and never finalized");
  }
}

async function finalize(
  deps: RelayDeps,
  rows: OutboxRow[],
  outcomes: PublishOutcome[],
  poison: OutboxFailure[],
  claimNext: NextClaim,
): Promise<BatchReport & { next?: Claim }> {
  const acked = outcomes.flatMap((o) => (o.ok ? [o] : []));
  const connected = deps.isConnected();
  const failures = [...planFailures(deps, rows, outcomes, connected), ...poison];
  const publishedAt = acked.map((o) => ({ eventId: o.event.eventId, publishedAt: o.ackedAt }));
  const record = connected && claimNext.size === 0 ? claimNext.record : undefined;
  if (record) for (const o of acked) recordLater(deps, o, record);
  const [{ published, next }, changed] = await Promise.all([
    markPublished(deps, record ? [] : publishedAt, connected ? claimNext : { size: 0 }),
    markOutboxFailures(deps.sql, { lockedBy: deps.lockedBy, failures }),
  ]);

  const publishedIds = new Set(published);
  for (const o of acked)
    if (publishedIds.has(o.event.eventId)) deps.metrics.observePublishDelay(o.event.occurredAt, o.ackedAt);
  const changedIds = new Set(changed);
  const done = failures.filter((f) => changedIds.has(f.eventId));
  const failed = done.filter((f) => f.status === "FAILED").length;
  const report = {
    claimed: rows.length,
    published: published.length,
    retried: done.length - failed,
    failed,
    lost: rows.length - published.length - done.length - (record ? acked.length : 0),
  };
  deps.metrics.countPublish("published", report.published);
  deps.metrics.countPublish("retry_scheduled", report.retried);
  deps.metrics.countPublish("failed", report.failed);
  logBatch(deps.log, report, failures, connected);
  return next ? { ...report, next } : report;
}

/** Hands an acknowledged event to `record`, and counts it once its row is marked (or says its lease was lost). */
function recordLater(deps: RelayDeps, o: Acked, record: NonNullable<NextClaim["record"]>): void {
  const fields = { event_id: o.event.eventId };
  record({ eventId: o.event.eventId, publishedAt: o.ackedAt }).then(
    (marked) => {
      if (!marked) return deps.log.warn({ ...fields, lost: 1 }, LEASE_LOST);
      deps.metrics.countPublish("published", 1);
      deps.metrics.observePublishDelay(o.event.occurredAt, o.ackedAt);
    },
    (error) => deps.log.warn({ ...fields, err: error }, "could not mark a published event; it is published again"),
  );
}

/** What becomes of each failed publish: a retry with backoff, or, while NATS is disconnected, its attempt back. */
function planFailures(
  deps: RelayDeps,
  rows: OutboxRow[],
  outcomes: PublishOutcome[],
  connected: boolean,
): OutboxFailure[] {
  const byId = new Map(rows.map((r) => [r.eventId, r]));
  const failedAt = deps.now();
  return outcomes.flatMap((o) => {
    if (o.ok) return [];
    const row = byId.get(o.event.eventId) as OutboxRow;
    return [
      connected
        ? planFailure(deps.settings, row, o.error, failedAt, { random: deps.random })
        : planRelease(deps.settings, row, o.error),
    ];
  });
}

/** Marks the acknowledged events PUBLISHED, in the same statement as the next claim when `claimNext.size` > 0. */
async function markPublished(
  deps: RelayDeps,
  published: { eventId: string; publishedAt: Date }[],
  claimNext: NextClaim,
): Promise<{ published: string[]; next?: Claim }> {
  if (claimNext.size === 0) {
    return { published: await markOutboxPublished(deps.sql, { lockedBy: deps.lockedBy, published }) };
  }
  const claimedAt = deps.now();
  const started = performance.now();
  const r = await markOutboxPublishedAndClaim(deps.sql, {
    lockedBy: deps.lockedBy,
    published,
    claim: claimArgs(deps, claimedAt, claimNext.size, claimNext),
  });
  const ms = performance.now() - started;
  return { published: r.published, next: { rows: r.claimed, claimedAt, ms, position: r.position } };
}

function logBatch(log: Logger, report: BatchReport, failures: OutboxFailure[], connected: boolean): void {
  if (report.lost > 0) log.warn({ lost: report.lost }, LEASE_LOST);
  for (const f of failures) {
    const fields = { event_id: f.eventId, attempt: f.attemptCount, error: f.lastError };
    if (f.status === "FAILED") log.error(fields, "outbox event FAILED; it needs an operator (outbox requeue)");
    else if (!connected) log.debug(fields, "outbox event released while NATS is disconnected");
    else log.warn({ ...fields, next_retry_at: f.nextRetryAt }, "outbox publish failed; retry scheduled");
  }
  log.debug(report, "outbox batch finalized");
}
