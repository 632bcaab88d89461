// The scheduler as the service runs it: the kinds the composition registers (workers.ts), their metrics and the loop.
import type { Registry } from "prom-client";
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { Wakeups } from "../wakeups.ts";
import type { DueWorkKind } from "./kind.ts";
import { createSchedulerMetrics } from "./metrics.ts";
import { createScheduler, type Scheduler, type SchedulerSettings } from "./scheduler.ts";

export type SchedulerWorkerDeps = {
  sql: Sql;
  log: Logger;
  now: Clock;
  registry: Registry;
  workerId: string;
  settings: SchedulerSettings;
  kinds: DueWorkKind[];
  wakeups: Wakeups;
};

export function createSchedulerWorker(deps: SchedulerWorkerDeps): Scheduler {
  return createScheduler({
    sql: deps.sql,
    log: deps.log.child({ component: "scheduler" }),
    now: deps.now,
    metrics: createSchedulerMetrics(deps.registry, deps.sql, deps.kinds, deps.now),
    settings: deps.settings,
    lockedBy: deps.workerId,
    kinds: deps.kinds,
    wakeups: deps.wakeups,
    // Executions write events (a points grant, an expiry's revoke): the relay of this process publishes them at once.
    onCommitted: (work) => deps.wakeups.committed(work),
  });
}
