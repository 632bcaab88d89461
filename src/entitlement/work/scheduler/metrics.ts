// Scheduler metrics, one series per kind of due work. Lateness (due time → execution) is the SLO's measure
// (docs/slo.md): the buckets are fine below 1 s, where the target is. The backlog and FAILED gauges are read at
// scrape time, so the loop never pays for a count(*).
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Db } from "../../../shared/db.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { DueWorkKind } from "./kind.ts";

export type SchedulerMetrics = {
  observeLateness(kind: string, seconds: number): void;
  count(kind: string, result: "executed" | "retry_scheduled" | "failed" | "lost", n?: number): void;
  /** A pass that failed as a whole (database trouble); the loop retries after the poll interval. */
  countError(kind: string): void;
};

const LATENESS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2, 5, 10, 30, 60, 300];

export function createSchedulerMetrics(
  registry: Registry,
  db: Db,
  kinds: readonly DueWorkKind[],
  now: Clock,
): SchedulerMetrics {
  const lateness = new Histogram({
    name: "entitlement_scheduler_lateness_seconds",
    help: "Time from an item's due time to its execution, by kind of due work.",
    labelNames: ["kind"] as const,
    buckets: LATENESS_BUCKETS,
    registers: [registry],
  });
  const results = new Counter({
    name: "entitlement_scheduler_items_total",
    help: "Outcomes of scheduled executions: executed, retry_scheduled, failed (ended FAILED), lost (lease lost).",
    labelNames: ["kind", "result"] as const,
    registers: [registry],
  });
  const errors = new Counter({
    name: "entitlement_scheduler_errors_total",
    help: "Scheduler passes that failed as a whole and were retried after the poll interval.",
    labelNames: ["kind"] as const,
    registers: [registry],
  });
  const gauge = (name: string, help: string, read: (kind: DueWorkKind) => Promise<number>) =>
    new Gauge({
      name,
      help,
      labelNames: ["kind"] as const,
      registers: [registry],
      async collect() {
        // A scrape while the database is down keeps the last values rather than failing the whole /metrics page.
        for (const kind of kinds) {
          const n = await read(kind).catch(() => undefined);
          if (n !== undefined) this.set({ kind: kind.name }, n);
        }
      },
    });
  gauge("entitlement_scheduler_due_backlog", "Unfinished items whose due time has passed.", (k) =>
    k.countDue(db, now()),
  );
  gauge("entitlement_scheduler_failed_current", "Items in FAILED (they need an operator).", (k) => k.countFailed(db));
  return {
    observeLateness: (kind, seconds) => lateness.observe({ kind }, Math.max(0, seconds)),
    count: (kind, result, n = 1) => {
      if (n > 0) results.inc({ kind, result }, n);
    },
    countError: (kind) => errors.inc({ kind }),
  };
}
