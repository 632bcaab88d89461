// Captures the MAX_DELIVERIES and MSG_TERMINATED advisories of the entitlement consumer, each through its own stream
// and durable (reference §7.3), into notification_nats_dlq.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsLink } from "../../shared/nats.ts";
import type { Worker } from "../../shared/runtime.ts";
import type { NotificationConfig } from "../config.ts";
import { createPullWorker } from "../nats/pull.ts";
import { ensureDurable, ensureOwnedStream } from "../nats/streams.ts";
import { type AdvisoryHandlerDeps, createAdvisoryHandler } from "./handler.ts";

export type AdvisorySpec = NotificationConfig["nats"]["advisories"][number];

export type AdvisoryCaptureDeps = Omit<AdvisoryHandlerDeps, "kind"> & {
  link: NatsLink;
  advisory: AdvisorySpec;
  /** The advisory durables reuse the entitlement consumer's ack wait and max deliver, as in the reference. */
  ackWaitMs: number;
  maxDeliver: number;
};

export function createAdvisoryCapture(deps: AdvisoryCaptureDeps): Worker {
  const { advisory } = deps;
  const log = deps.log.child({ component: "advisory-capture", kind: advisory.kind });
  const handle = createAdvisoryHandler({ ...deps, log, kind: advisory.kind });
  return createPullWorker(`advisory-${advisory.kind}`, deps.link, (nc) => ({
    prepare: async () => {
      const jsm = await jetstreamManager(nc);
      await ensureOwnedStream(jsm, { name: advisory.stream, ...advisory });
      await ensureDurable(jsm, {
        stream: advisory.stream,
        durable: advisory.durable,
        ackWaitMs: deps.ackWaitMs,
        maxDeliver: deps.maxDeliver,
      });
      return jetstream(nc).consumers.get(advisory.stream, advisory.durable);
    },
    batchSize: 50,
    handle: async (messages, signal) => {
      for (const message of messages) await handle(message, signal);
    },
    log,
  }));
}
