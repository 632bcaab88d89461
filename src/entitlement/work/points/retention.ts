// Retention of point reservations: at start and then every cleanup interval, DONE and CANCELLED reservations older
// than ENTITLEMENT_POINTS_RESERVATION_TTL are deleted in bounded batches. The ledger (point_transactions), the
// balances and the audit rows are kept: they are the record of what was granted.
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import { periodicWorker, untilShortBatch } from "../../../shared/periodic.ts";
import type { Clock, Worker } from "../../../shared/runtime.ts";
import { deleteFinishedReservations } from "../../features/points/reservation-queries.ts";

export type PointsRetentionSettings = { cleanupIntervalMs: number; reservationTtlMs: number; batchSize?: number };
export type PointsRetentionDeps = { sql: Sql; log: Logger; now: Clock; settings: PointsRetentionSettings };

export async function runPointsRetentionOnce(deps: PointsRetentionDeps, signal?: AbortSignal): Promise<number> {
  const threshold = new Date(deps.now().getTime() - deps.settings.reservationTtlMs);
  return untilShortBatch(
    (limit) => deleteFinishedReservations(deps.sql, { threshold, limit }),
    deps.settings.batchSize ?? 1000,
    signal,
  );
}

export function createPointsRetentionWorker(deps: PointsRetentionDeps): Worker {
  const log = deps.log.child({ component: "points-retention" });
  return periodicWorker({
    name: "points-retention",
    intervalMs: deps.settings.cleanupIntervalMs,
    log,
    once: async (signal) => {
      const reservations = await runPointsRetentionOnce(deps, signal);
      if (reservations) log.info({ reservations }, "retention deleted finished point reservations");
    },
  });
}
