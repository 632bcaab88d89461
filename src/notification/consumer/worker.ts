// The entitlement event consumer: durable pull consumer on the entitlement stream (CONTRACT §4).
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsLink } from "../../shared/nats.ts";
import type { Worker } from "../../shared/runtime.ts";
import type { NotificationConfig } from "../config.ts";
import { createPullWorker } from "../nats/pull.ts";
import { termTakesReason } from "../nats/server.ts";
import { ensureDurable, ensureOwnedStream, ensureStreamExists } from "../nats/streams.ts";
import { createEventHandler, type EventHandlerDeps } from "./handler.ts";

export type ConsumerHealth = { bound: boolean };

export type EventConsumerDeps = EventHandlerDeps & {
  link: NatsLink;
  nats: NotificationConfig["nats"];
  batchSize: number;
  health: ConsumerHealth;
};

export function createEventConsumer(deps: EventConsumerDeps): Worker {
  const { nats } = deps;
  const log = deps.log.child({ component: "event-consumer" });
  return createPullWorker("event-consumer", deps.link, (nc) => ({
    prepare: async () => {
      const jsm = await jetstreamManager(nc);
      // The advisory streams must exist before the first term() or max-deliver, or that advisory is lost.
      for (const a of nats.advisories) await ensureOwnedStream(jsm, { name: a.stream, ...a });
      await ensureStreamExists(jsm, {
        name: nats.stream,
        subject: nats.subject,
        replicas: nats.replicas,
        duplicateWindowMs: nats.duplicateWindowMs,
      });
      await ensureDurable(jsm, {
        stream: nats.stream,
        durable: nats.durable,
        ackWaitMs: nats.ackWaitMs,
        maxDeliver: nats.maxDeliver,
        filterSubject: nats.subject,
      });
      return jetstream(nc).consumers.get(nats.stream, nats.durable);
    },
    batchSize: deps.batchSize,
    handle: createEventHandler({ ...deps, log, termTakesReason: () => termTakesReason(nc) }),
    onBound: (bound) => {
      deps.health.bound = bound;
    },
    log,
  }));
}
