// entitlement_history_default_rows{table}: rows the default partition of a history table holds. It should be 0: a row
// lands there only when no month partition covers its time (a clock far off, or partition maintenance failing for
// months), and it blocks nothing, but the month it belongs to is then created only by moving it (alert
// EntitlementHistoryOutsidePartitions).
import { Gauge, type Registry } from "prom-client";
import type { HistoryTable } from "./queries.ts";

export type PartitionMetrics = { defaultRows: (table: HistoryTable, rows: number) => void };

export function createPartitionMetrics(registry: Registry): PartitionMetrics {
  const gauge = new Gauge({
    name: "entitlement_history_default_rows",
    help: "Rows in the default partition of a partitioned history table (counted up to 1e6 at each maintenance run).",
    labelNames: ["table"] as const,
    registers: [registry],
  });
  return { defaultRows: (table, rows) => gauge.set({ table }, rows) };
}
