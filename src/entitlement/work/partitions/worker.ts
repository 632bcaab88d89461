// The partition maintenance as a periodic worker (maintenance.ts); it runs in every replica, whatever the retention
// settings: the database functions it calls take a lock per table, so replicas never race to create one month.
import { periodicWorker } from "../../../shared/periodic.ts";
import type { Worker } from "../../../shared/runtime.ts";
import { type PartitionDeps, runPartitionMaintenanceOnce } from "./maintenance.ts";

export function createPartitionWorker(deps: PartitionDeps): Worker {
  return periodicWorker({
    name: "history-partitions",
    intervalMs: deps.settings.intervalMs,
    log: deps.log,
    once: async (_signal, log) => {
      const report = await runPartitionMaintenanceOnce({ ...deps, log });
      if (report.created.length > 0 || report.dropped.length > 0) {
        log.info({ created: report.created, dropped: report.dropped }, "history partitions maintained");
      }
      const outside = Object.entries(report.defaultRows).filter(([, rows]) => rows > 0);
      if (outside.length > 0) {
        log.warn({ default_rows: Object.fromEntries(outside) }, "history rows outside every month partition");
      }
    },
  });
}
