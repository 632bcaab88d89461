// Builds the background workers from the opened resources; main and the integration tests share it. It is also where
// the kinds of due work the scheduler runs are registered: a new kind is one file returning a DueWorkKind
// (scheduler/kind.ts says what its table needs) and one line in `dueWorkKinds`.
import type { Registry } from "prom-client";
import type { Sql } from "../shared/db.ts";
import type { Logger } from "../shared/logger.ts";
import type { NatsLink } from "../shared/nats.ts";
import type { Clock, Worker } from "../shared/runtime.ts";
import type { EntitlementConfig } from "./config.ts";
import { entitlementExpiryDue } from "./work/expiry/due-work.ts";
import { createOutboxWorker } from "./work/outbox/worker.ts";
import { createPartitionMetrics } from "./work/partitions/metrics.ts";
import { createPartitionWorker } from "./work/partitions/worker.ts";
import { type PointsDueSettings, pointReservationsDue } from "./work/points/due-work.ts";
import { createPointsRetentionWorker } from "./work/points/retention.ts";
import { createRetentionWorker } from "./work/retention/worker.ts";
import type { DueWorkKind } from "./work/scheduler/kind.ts";
import { createSchedulerWorker } from "./work/scheduler/worker.ts";
import type { Wakeups } from "./work/wakeups.ts";

export type WorkerDeps = {
  config: EntitlementConfig;
  sql: Sql;
  log: Logger;
  now: Clock;
  registry: Registry;
  workerId: string;
  /** Undefined when the relay is off (ENTITLEMENT_OUTBOX_ENABLED=false or NATS_ENABLED=false). */
  link: NatsLink | undefined;
  /** The wake-ups the commands of this process signal (createApp's onCommitted). */
  wakeups: Wakeups;
};

/** Every kind of due work the scheduler runs. */
export function dueWorkKinds(settings: { points: PointsDueSettings }): DueWorkKind[] {
  return [pointReservationsDue(settings.points), entitlementExpiryDue()] as DueWorkKind[];
}

export function createWorkers(deps: WorkerDeps): Worker[] {
  const { config, sql, log, now } = deps;
  return [
    ...(deps.link
      ? [
          createOutboxWorker({
            sql,
            link: deps.link,
            log,
            now,
            registry: deps.registry,
            workerId: deps.workerId,
            wakeups: deps.wakeups,
            settings: { ...config.outbox, subject: config.nats.subject },
            stream: config.nats,
            otherStreams: [
              {
                stream: config.points.stream,
                subject: config.points.subject,
                duplicateWindowMs: config.nats.duplicateWindowMs,
                replicas: config.nats.replicas,
              },
            ],
          }),
        ]
      : []),
    ...(config.scheduler.enabled
      ? [
          createSchedulerWorker({
            sql,
            log,
            now,
            registry: deps.registry,
            workerId: deps.workerId,
            settings: config.scheduler,
            kinds: dueWorkKinds({ points: { subject: config.points.subject } }),
            wakeups: deps.wakeups,
          }),
        ]
      : []),
    createPartitionWorker({
      sql,
      log,
      now,
      metrics: createPartitionMetrics(deps.registry),
      settings: config.partitions,
    }),
    ...(config.retention.enabled
      ? [
          createRetentionWorker({ sql, log, now, settings: config.retention }),
          createPointsRetentionWorker({
            sql,
            log,
            now,
            settings: { ...config.retention, reservationTtlMs: config.points.reservationTtlMs },
          }),
        ]
      : []),
  ];
}
