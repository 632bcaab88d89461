// Runs retention every cleanup interval (on by default, CONTRACT §2); a failed run is logged and tried next time.
import type { Sql } from "../../shared/db.ts";
import type { Logger } from "../../shared/logger.ts";
import { type Clock, sleep } from "../../shared/runtime.ts";
import type { Worker } from "../../shared/service.ts";
import { runRetention } from "./service.ts";

export function createRetentionWorker(deps: {
  sql: Sql;
  log: Logger;
  clock: Clock;
  retentionDays: number;
  cleanupIntervalMs: number;
}): Worker {
  const log = deps.log.child({ component: "retention" });
  return {
    name: "retention",
    run: async (signal) => {
      while (!signal.aborted) {
        try {
          await runRetention({ sql: deps.sql, log, now: deps.clock(), retentionDays: deps.retentionDays }, signal);
        } catch (error) {
          log.error({ err: error }, "retention run failed");
        }
        await sleep(deps.cleanupIntervalMs, signal);
      }
    },
  };
}
