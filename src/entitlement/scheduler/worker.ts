// The scheduler as the service runs it: every registered kind (kinds.ts), its metrics and its loop.
import type { Registry } from "prom-client";
import type { Sql } from "../../shared/db.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Clock } from "../../shared/runtime.ts";
import { dueWorkKinds, type KindSettings } from "./kinds.ts";
import { createSchedulerMetrics } from "./metrics.ts";
import { createScheduler, type Scheduler, type SchedulerSettings } from "./scheduler.ts";

export type SchedulerWorkerDeps = {
  sql: Sql;
  log: Logger;
  now: Clock;
  registry: Registry;
  workerId: string;
  settings: SchedulerSettings;
  kinds: KindSettings;
};

export function createSchedulerWorker(deps: SchedulerWorkerDeps): Scheduler {
  const kinds = dueWorkKinds(deps.kinds);
  return createScheduler({
    sql: deps.sql,
    log: deps.log.child({ component: "scheduler" }),
    now: deps.now,
    metrics: createSchedulerMetrics(deps.registry, deps.sql, kinds, deps.now),
    settings: deps.settings,
    lockedBy: deps.workerId,
    kinds,
  });
}
