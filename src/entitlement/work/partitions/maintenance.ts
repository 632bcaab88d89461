// Partition maintenance: at start and then every interval, the month partitions of every history table from the
// current month to `monthsAhead` months ahead are created (so an insert always has its month, and the default
// partition stays empty), the default partitions' rows are counted into the metric, and, when an audit retention is
// set, the audit's months wholly older than it are detached and dropped: a catalog change instead of a long delete.
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { PartitionMetrics } from "./metrics.ts";
import {
  countDefaultPartitionRows,
  createHistoryPartition,
  detachHistoryPartition,
  dropDetachedHistoryPartition,
  findPartitionsBefore,
  HISTORY_TABLES,
  type HistoryTable,
} from "./queries.ts";

export type PartitionSettings = {
  intervalMs: number;
  /** Months created ahead of the current one. */
  monthsAhead: number;
  /** Audit months older than this are dropped; 0 keeps the audit forever. */
  auditRetentionMs: number;
};
export type PartitionDeps = {
  sql: Sql;
  log: Logger;
  now: Clock;
  metrics?: PartitionMetrics;
  settings: PartitionSettings;
};
export type MaintenanceReport = { created: string[]; dropped: string[]; defaultRows: Record<HistoryTable, number> };

const DEFAULT_ROWS_CAP = 1_000_000;

/** The first instant (UTC) of the month `offset` months after the one `now` is in. */
export function monthStart(now: Date, offset: number): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1));
}

export async function runPartitionMaintenanceOnce(deps: PartitionDeps): Promise<MaintenanceReport> {
  const now = deps.now();
  const created: string[] = [];
  for (const parent of HISTORY_TABLES) {
    for (let offset = 0; offset <= deps.settings.monthsAhead; offset++) {
      const month = monthStart(now, offset);
      if (await createHistoryPartition(deps.sql, { parent, month })) {
        created.push(`${parent}_${month.toISOString().slice(0, 7).replace("-", "_")}`);
      }
    }
  }
  const dropped = deps.settings.auditRetentionMs > 0 ? await dropAuditBefore(deps, now) : [];
  const defaultRows = await countDefaultPartitionRows(deps.sql, DEFAULT_ROWS_CAP);
  for (const table of HISTORY_TABLES) deps.metrics?.defaultRows(table, defaultRows[table]);
  return { created, dropped, defaultRows };
}

/** Detach and drop in one transaction, so that a failure leaves the month attached rather than a stray table. */
async function dropAuditBefore(deps: PartitionDeps, now: Date): Promise<string[]> {
  const threshold = new Date(now.getTime() - deps.settings.auditRetentionMs);
  const old = await findPartitionsBefore(deps.sql, { parent: "entitlement_audit", threshold });
  for (const partition of old) {
    await deps.sql.begin(async (tx) => {
      await detachHistoryPartition(tx, partition);
      await dropDetachedHistoryPartition(tx, partition);
    });
  }
  return old;
}
