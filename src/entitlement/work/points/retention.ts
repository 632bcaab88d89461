// Retention of point reservations: at start and then every cleanup interval, DONE and CANCELLED reservations older
// than ENTITLEMENT_POINTS_RESERVATION_TTL are deleted in bounded batches. The ledger (point_transactions), the
// balances and the audit rows are kept: they are the record of what was granted.
import type { Db, Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import { deleteOldRows, logDeleted, periodicWorker, type Resume, untilShortBatch } from "../../../shared/periodic.ts";
import type { Clock, Worker } from "../../../shared/runtime.ts";

export type PointsRetentionSettings = { cleanupIntervalMs: number; reservationTtlMs: number; batchSize?: number };
export type PointsRetentionDeps = { sql: Sql; log: Logger; now: Clock; settings: PointsRetentionSettings };

export async function runPointsRetentionOnce(deps: PointsRetentionDeps, signal?: AbortSignal): Promise<number> {
  const threshold = new Date(deps.now().getTime() - deps.settings.reservationTtlMs);
  return untilShortBatch(
    (limit, resume) => deleteFinishedReservations(deps.sql, { threshold, limit, resume }),
    deps.settings.batchSize ?? 1000,
    signal,
  );
}

/**
 * DONE and CANCELLED reservations last updated at or before `threshold` (deleteOldRows); PENDING, PROCESSING and
 * FAILED ones are never touched. Returns how many it deleted.
 */
export function deleteFinishedReservations(db: Db, args: { threshold: Date; limit: number; resume?: Resume }) {
  return deleteOldRows(
    db,
    {
      table: "point_reservations",
      column: "updated_at",
      old: (q) => q`status in ('DONE', 'CANCELLED') and updated_at <= ${args.threshold}`,
    },
    args,
  );
}

export function createPointsRetentionWorker(deps: PointsRetentionDeps): Worker {
  return periodicWorker({
    name: "points-retention",
    intervalMs: deps.settings.cleanupIntervalMs,
    log: deps.log,
    once: async (signal, log) => {
      const reservations = await runPointsRetentionOnce(deps, signal);
      logDeleted(log, { reservations }, "retention deleted finished point reservations");
    },
  });
}
