// Captures the MAX_DELIVERIES and MSG_TERMINATED advisories of every event consumer, each kind through its own stream
// and durable, into notification_nats_dlq. One stream per kind holds the advisory subject of each
// consumer, so a further kind of event adds a subject, not a stream.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsLink } from "../../../shared/nats.ts";
import type { Worker } from "../../../shared/runtime.ts";
import { createPullWorker } from "../nats/pull.ts";
import { ensureDurable, ensureOwnedStream } from "../nats/streams.ts";
import { type AdvisoryHandlerDeps, createAdvisoryHandler } from "./handler.ts";
import type { AdvisoryKind } from "./parse.ts";

/** One kind's advisory stream and its durable, as configured (config.ts builds them). */
export type AdvisoryStreamSettings = { kind: AdvisoryKind; stream: string; durable: string; replicas: number };

/** One advisory stream and its durable, with the consumers it watches. */
export type AdvisorySpec = AdvisoryStreamSettings & {
  /** The advisory subject of each event consumer, with that consumer's stream and source (for the metric label). */
  watches: { subject: string; stream: string; source: string }[];
};

/** What an advisory stream needs of an event pipeline (consumer/handler.ts EventPipeline has it). */
type WatchedPipeline = {
  consumer: { stream: string; advisorySubjects: Record<AdvisoryKind, string> };
  handler: { source: string };
};

/** The advisory streams for these pipelines: each kind's stream takes the advisory subject of every pipeline. */
export function advisorySpecs(
  advisories: (AdvisoryStreamSettings & { subject: string })[],
  pipelines: WatchedPipeline[],
): AdvisorySpec[] {
  return advisories.map(({ subject: _, ...a }) => ({
    ...a,
    watches: pipelines.map((p) => ({
      subject: p.consumer.advisorySubjects[a.kind],
      stream: p.consumer.stream,
      source: p.handler.source,
    })),
  }));
}

/** The stream as ensureOwnedStream takes it. */
export const advisoryStream = (a: AdvisorySpec) => ({
  name: a.stream,
  subjects: a.watches.map((w) => w.subject),
  replicas: a.replicas,
});

export type AdvisoryCaptureDeps = Omit<AdvisoryHandlerDeps, "kind"> & {
  link: NatsLink;
  advisory: AdvisorySpec;
  /** The advisory durables reuse the entitlement consumer's ack wait and max deliver. */
  ackWaitMs: number;
  maxDeliver: number;
};

export function createAdvisoryCapture(deps: AdvisoryCaptureDeps): Worker {
  const { advisory } = deps;
  const log = deps.log.child({ component: "advisory-capture", kind: advisory.kind });
  const sources = new Map(advisory.watches.map((w) => [w.stream, w.source]));
  const handle = createAdvisoryHandler({ ...deps, log, kind: advisory.kind, sourceOf: (s) => sources.get(s) });
  return createPullWorker(`advisory-${advisory.kind}`, deps.link, (nc) => ({
    prepare: async () => {
      const jsm = await jetstreamManager(nc);
      await ensureOwnedStream(jsm, advisoryStream(advisory));
      await ensureDurable(jsm, {
        stream: advisory.stream,
        durable: advisory.durable,
        ackWaitMs: deps.ackWaitMs,
        maxDeliver: deps.maxDeliver,
      });
      return jetstream(nc).consumers.get(advisory.stream, advisory.durable);
    },
    // An advisory is never urgent: the default heartbeat (15 s) keeps an idle reader cheap.
    batchSize: 50,
    ackWaitMs: deps.ackWaitMs,
    handle: async (messages, signal) => {
      for (const message of messages) await handle(message, signal);
    },
    log,
  }));
}
