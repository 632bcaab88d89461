// Retention, on by default: at start and then every cleanup interval, delete expired
// idempotency keys and old PUBLISHED outbox events, a bounded batch per statement until none is left.
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import { logDeleted, periodicWorker, untilShortBatch } from "../../../shared/periodic.ts";
import type { Clock, Worker } from "../../../shared/runtime.ts";
import { deleteExpiredIdempotencyKeys, deletePublishedOutboxEvents } from "./queries.ts";

export type RetentionSettings = { cleanupIntervalMs: number; publishedTtlMs: number; batchSize?: number };
export type RetentionDeps = { sql: Sql; log: Logger; now: Clock; settings: RetentionSettings };
export type RetentionReport = { idempotencyKeys: number; outboxEvents: number };

/** 1000 rows take a few milliseconds to delete: short locks, and few round trips for a day's worth of events. */
const DEFAULT_BATCH = 1000;

/** One cleanup pass with a single `now`, so both bounds refer to the same instant. */
export async function runRetentionOnce(deps: RetentionDeps, signal?: AbortSignal): Promise<RetentionReport> {
  const now = deps.now();
  const limit = deps.settings.batchSize ?? DEFAULT_BATCH;
  const threshold = new Date(now.getTime() - deps.settings.publishedTtlMs);
  // Each table's run resumes every batch where the one before stopped (queries.ts).
  const idempotencyKeys = await untilShortBatch(
    (l, resume) => deleteExpiredIdempotencyKeys(deps.sql, { now, limit: l, resume }),
    limit,
    signal,
  );
  const outboxEvents = await untilShortBatch(
    (l, resume) => deletePublishedOutboxEvents(deps.sql, { threshold, limit: l, resume }),
    limit,
    signal,
  );
  return { idempotencyKeys, outboxEvents };
}

export function createRetentionWorker(deps: RetentionDeps): Worker {
  return periodicWorker({
    name: "entitlement-retention",
    component: "retention",
    intervalMs: deps.settings.cleanupIntervalMs,
    log: deps.log,
    once: async (signal, log) => {
      const report = await runRetentionOnce(deps, signal);
      const counts = { idempotency_keys: report.idempotencyKeys, outbox_events: report.outboxEvents };
      logDeleted(log, counts, "retention deleted expired rows");
    },
  });
}
