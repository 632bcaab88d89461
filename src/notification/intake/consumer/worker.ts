// The one consumer loop of this service, run once per kind of event (handlers/registry.ts): a durable pull consumer
// on the kind's stream (docs/events.md), its batches handed to the shared batch handler with the kind's decoder.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsLink } from "../../../shared/nats.ts";
import type { Worker } from "../../../shared/runtime.ts";
import { type AdvisorySpec, advisoryStream } from "../advisories/worker.ts";
import { createPullWorker, EVENT_HEARTBEAT_MS } from "../nats/pull.ts";
import { termTakesReason } from "../nats/server.ts";
import { ensureDurable, ensureOwnedStream, ensureStreamExists } from "../nats/streams.ts";
import { type BatchHandlerDeps, createBatchHandler } from "./batch.ts";
import type { EventPipeline } from "./handler.ts";

/** Whether each consumer is reading, by source; readiness needs every one of them. */
export type ConsumerHealth = { bound: Record<string, boolean> };

export const allBound = (health: ConsumerHealth, sources: string[]) => sources.every((s) => health.bound[s] === true);

export type EventConsumerDeps = Omit<BatchHandlerDeps, "handler"> & {
  link: NatsLink;
  pipeline: EventPipeline;
  /** The advisory streams, made ready before the first message is read (see below). */
  advisories: AdvisorySpec[];
  batchSize: number;
  health: ConsumerHealth;
};

export function createEventConsumer(deps: EventConsumerDeps): Worker {
  const { handler, consumer } = deps.pipeline;
  const name = `${handler.source}-consumer`;
  const log = deps.log.child({ component: name });
  return createPullWorker(name, deps.link, (nc) => ({
    prepare: async () => {
      const jsm = await jetstreamManager(nc);
      // The advisory streams must exist before the first term() or max-deliver, or that advisory is lost.
      for (const a of deps.advisories) await ensureOwnedStream(jsm, advisoryStream(a));
      await ensureStreamExists(jsm, { name: consumer.stream, subjects: [consumer.subject], ...consumer });
      await ensureDurable(jsm, { ...consumer, filterSubject: consumer.subject });
      return jetstream(nc).consumers.get(consumer.stream, consumer.durable);
    },
    batchSize: deps.batchSize,
    ackWaitMs: consumer.ackWaitMs,
    heartbeatMs: EVENT_HEARTBEAT_MS,
    handle: createBatchHandler({ ...deps, handler, log, termTakesReason: () => termTakesReason(nc) }),
    onBound: (bound) => {
      deps.health.bound[handler.source] = bound;
    },
    log,
  }));
}
