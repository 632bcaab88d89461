// Builds the background workers from the opened resources; main and the integration tests share it.
import type { NatsLink } from "../shared/nats.ts";
import type { Handles, Waker, Worker } from "../shared/runtime.ts";
import type { NotificationConfig } from "./config.ts";
import type { Resolve } from "./features/endpoints/url-guard.ts";
import type { Players } from "./features/players/setup.ts";
import { advisorySpecs, createAdvisoryCapture } from "./intake/advisories/worker.ts";
import type { Handoff } from "./intake/consumer/batch.ts";
import { type ConsumerHealth, createEventConsumer } from "./intake/consumer/worker.ts";
import { eventPipelines } from "./intake/handlers/registry.ts";
import type { NotificationMetrics } from "./metrics.ts";
import { createSender } from "./work/channels/select.ts";
import type { Sender } from "./work/channels/sender.ts";
import { createDeliveryWorker, type DeliveryWorker } from "./work/delivery/worker.ts";
import { endpointDeliveryWorker } from "./work/endpoints/build.ts";
import { pushWorker } from "./work/push/build.ts";
import { createRetentionWorker } from "./work/retention/worker.ts";

/** Events per consumer transaction; the client keeps at most this many unacknowledged messages buffered. */
const EVENT_BATCH_SIZE = 100;

export type WorkerDeps = Handles & {
  config: NotificationConfig;
  metrics: NotificationMetrics;
  waker: Waker;
  workerId: string;
  /** Undefined when NATS is disabled. */
  link: NatsLink | undefined;
  health: ConsumerHealth;
  /** Replaces the configured channel (tests). */
  send?: Sender;
  /** Wakes the endpoint delivery worker; the app's replay and re-enable use it too (main.ts). */
  endpointWaker?: Waker;
  /** Wakes the push worker (main.ts: the send API too); absent: no push worker. */
  pushWaker?: Waker;
  /** Replaces DNS for the endpoints' SSRF guard (tests). */
  resolve?: Resolve;
  /** The players' side: told of every commit's users; its workers run with the others. */
  players?: Players;
};

function natsWorkers(deps: WorkerDeps, link: NatsLink, handoff: Handoff | undefined): Worker[] {
  const { config, sql, log, now, metrics } = deps;
  const pipelines = eventPipelines(config.nats);
  const advisories = advisorySpecs(config.nats.advisories, pipelines);
  return [
    ...pipelines.map((pipeline) =>
      createEventConsumer({
        sql,
        log,
        now,
        metrics,
        link,
        pipeline,
        advisories,
        batchSize: EVENT_BATCH_SIZE,
        health: deps.health,
        handoff,
        onCreated: (handedOff) => {
          if (!handedOff) deps.waker.wake();
          deps.endpointWaker?.wake();
          deps.pushWaker?.wake();
        },
        onStored: deps.players?.stored,
      }),
    ),
    ...advisories.map((advisory) =>
      createAdvisoryCapture({
        sql,
        log,
        now,
        metrics,
        link,
        advisory,
        ackWaitMs: config.nats.ackWaitMs,
        maxDeliver: config.nats.maxDeliver,
      }),
    ),
  ];
}

function deliveryWorker(deps: WorkerDeps): DeliveryWorker {
  const { sql, log, now, metrics } = deps;
  const d = deps.config.delivery;
  return createDeliveryWorker({
    sql,
    log,
    now,
    metrics,
    send: deps.send ?? createSender(d, log.child({ component: "channel" }), now),
    workerId: deps.workerId,
    batchSize: d.batchSize,
    maxAttempts: d.maxAttempts,
    leaseMs: d.leaseMs,
    errorMessageMaxLength: d.errorMessageMaxLength,
    backoff: d.backoff,
    waker: deps.waker,
    pollIntervalMs: d.pollIntervalMs,
    idlePollMs: d.idlePollMs,
  });
}

function endpointWorkers(deps: WorkerDeps): Worker[] {
  if (!deps.config.delivery.enabled || !deps.endpointWaker) return [];
  const worker = endpointDeliveryWorker({ ...deps, waker: deps.endpointWaker });
  return worker ? [worker] : [];
}

function pushWorkers(deps: WorkerDeps): Worker[] {
  if (!deps.config.delivery.enabled || !deps.pushWaker) return [];
  const worker = pushWorker({ ...deps, waker: deps.pushWaker });
  return worker ? [worker] : [];
}

export function createWorkers(deps: WorkerDeps): Worker[] {
  const { config, sql, log, now } = deps;
  const r = config.retention;
  const delivery = config.delivery.enabled ? deliveryWorker(deps) : undefined;
  return [
    ...(deps.link ? natsWorkers(deps, deps.link, delivery) : []),
    ...(deps.players?.workers ?? []),
    ...(delivery ? [delivery] : []),
    ...endpointWorkers(deps),
    ...pushWorkers(deps),
    ...(r.enabled
      ? [
          createRetentionWorker({
            sql,
            log,
            now,
            retentionDays: r.retentionDays,
            cleanupIntervalMs: r.cleanupIntervalMs,
          }),
        ]
      : []),
  ];
}
