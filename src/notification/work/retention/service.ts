// One retention run: report stale PENDING/PROCESSING rows (never deleted: they mean delivery is stuck), then delete
// finished notifications and processed events older than the threshold, in bounded batches so no statement holds
// many row locks for long.
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import { type Resume, untilShortBatch } from "../../../shared/periodic.ts";
import {
  countStaleActive,
  deleteExpiredRequests,
  deleteFinishedDeliveries,
  deleteFinishedNotifications,
  deleteFinishedPushes,
  deleteProcessedEvents,
  deleteWebhookAttempts,
} from "./queries.ts";

export type RetentionOutcome = {
  staleActive: number;
  notificationsDeleted: number;
  processedEventsDeleted: number;
  deliveriesDeleted: number;
  attemptsDeleted: number;
  /** Finished pushes to players' devices. */
  pushesDeleted: number;
  /** Send requests whose Idempotency-Key expired. */
  requestsDeleted: number;
};

const DAY_MS = 86_400_000;

export async function runRetention(
  deps: { sql: Sql; log: Logger; now: Date; retentionDays: number; batchSize?: number },
  signal?: AbortSignal,
): Promise<RetentionOutcome> {
  const { sql, log } = deps;
  const threshold = new Date(deps.now.getTime() - deps.retentionDays * DAY_MS);
  const limit = deps.batchSize ?? 1_000;
  const staleActive = await countStaleActive(sql, threshold);
  if (staleActive > 0) {
    log.error(
      { stale_active: staleActive, threshold },
      "stale active records: PENDING/PROCESSING older than retention",
    );
  }
  // Each table's run resumes every batch where the one before stopped (src/shared/periodic.ts untilShortBatch).
  const drain: Drain = (del) =>
    untilShortBatch((l, resume) => del(sql, { threshold, limit: l, resume }), limit, signal);
  const notificationsDeleted = await drain(deleteFinishedNotifications);
  const processedEventsDeleted = await drain(deleteProcessedEvents);
  // The endpoints' finished deliveries and their attempts log, and the finished pushes: the notifications' threshold.
  const deliveriesDeleted = await drain(deleteFinishedDeliveries);
  const attemptsDeleted = await drain(deleteWebhookAttempts);
  const pushesDeleted = await drain(deleteFinishedPushes);
  const now = deps.now;
  const requestsDeleted = await untilShortBatch(
    (l, resume) => deleteExpiredRequests(sql, { now, limit: l, resume }),
    limit,
    signal,
  );
  log.info(
    {
      threshold,
      notifications_deleted: notificationsDeleted,
      processed_events_deleted: processedEventsDeleted,
      webhook_deliveries_deleted: deliveriesDeleted,
      webhook_attempts_deleted: attemptsDeleted,
      push_deliveries_deleted: pushesDeleted,
      notification_requests_deleted: requestsDeleted,
    },
    "retention run finished",
  );
  return {
    staleActive,
    notificationsDeleted,
    processedEventsDeleted,
    deliveriesDeleted,
    attemptsDeleted,
    pushesDeleted,
    requestsDeleted,
  };
}

/** Deletes with `del` all of one table's rows older than the run's threshold, in bounded batches; returns how many. */
type Drain = (
  del: (db: Sql, args: { threshold: Date; limit: number; resume: Resume }) => Promise<number>,
) => Promise<number>;
