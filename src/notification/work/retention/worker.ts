// Runs retention every cleanup interval (on by default); a failed run is logged and tried next time.
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import { periodicWorker } from "../../../shared/periodic.ts";
import type { Clock, Worker } from "../../../shared/runtime.ts";
import { runRetention } from "./service.ts";

export function createRetentionWorker(deps: {
  sql: Sql;
  log: Logger;
  now: Clock;
  retentionDays: number;
  cleanupIntervalMs: number;
}): Worker {
  return periodicWorker({
    name: "notification-retention",
    component: "retention",
    intervalMs: deps.cleanupIntervalMs,
    log: deps.log,
    once: async (signal, log) => {
      await runRetention({ sql: deps.sql, log, now: deps.now(), retentionDays: deps.retentionDays }, signal);
    },
  });
}
