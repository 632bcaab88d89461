// The relay as the service runs it: it waits for NATS in the background (the API serves meanwhile),
// makes sure the stream exists, and then runs the relay loop. After every reconnect it checks the stream again before
// claiming, so a NATS that came back empty gets its stream back instead of failing every publish.
import { type JetStreamClient, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Registry } from "prom-client";
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { NatsConnection, NatsLink } from "../../../shared/nats.ts";
import { type Clock, sleep, type Worker } from "../../../shared/runtime.ts";
import type { WakeSource } from "../wakeups.ts";
import { loadEncoder } from "./encoder.ts";
import { createJetStreamPublisher } from "./jetstream-publisher.ts";
import { createOutboxMetrics } from "./metrics.ts";
import type { RelaySettings } from "./policy.ts";
import { countFailedOutbox } from "./queries.ts";
import { createOutboxRelay } from "./relay.ts";
import { ensureEntitlementStream, type StreamSettings, validateStreamSettings } from "./stream.ts";

export type OutboxWorkerDeps = {
  sql: Sql;
  /** The connection, still being established when the service starts. */
  link: NatsLink;
  log: Logger;
  now: Clock;
  registry: Registry;
  workerId: string;
  settings: RelaySettings;
  stream: StreamSettings;
  /**
   * Further streams the relay publishes to and owns like `stream`: points-events (subject points.events). A stream
   * of its own rather than a second subject on entitlement-events, so the entitlement consumer never sees a
   * PointsEvent, and each stream keeps its own retention and replica count (docs/decisions.md).
   */
  otherStreams?: StreamSettings[];
  /** What wakes the relay when events commit (wakeups/wakeups.ts). */
  wakeups: WakeSource;
  /** Publish through something else than `jetstream(nc)` (tests inject failures and delays). */
  wrapPublisher?: (js: JetStreamClient) => Pick<JetStreamClient, "publish">;
};

/** Validates the stream settings at once (a bad one stops the start), then returns the worker. */
export function createOutboxWorker(deps: OutboxWorkerDeps): Worker {
  for (const stream of streamsOf(deps)) validateStreamSettings(stream);
  const metrics = createOutboxMetrics(deps.registry, () => countFailedOutbox(deps.sql));
  const log = deps.log.child({ component: "outbox-relay" });
  return {
    name: "outbox-relay",
    async run(signal) {
      const nc = await deps.link.get(signal);
      if (!nc) return;
      let streamReady = false;
      const own = deps.wrapPublisher ? undefined : createJetStreamPublisher(nc, PUBLISH_TIMEOUT);
      const js = own ?? (deps.wrapPublisher as NonNullable<typeof deps.wrapPublisher>)(jetstream(nc));
      const relay = createOutboxRelay({
        sql: deps.sql,
        js,
        log,
        now: deps.now,
        metrics,
        settings: deps.settings,
        lockedBy: deps.workerId,
        wakeups: deps.wakeups,
        isConnected: () => streamReady && deps.link.connected(),
      });
      const bootstrap = async () => {
        streamReady = await ensureStream(nc, deps, log, signal);
        await loadEncoder();
        relay.wake();
      };
      const stopWatching = deps.link.onReconnect(() => {
        streamReady = false;
        void bootstrap();
      });
      void bootstrap();
      await relay.run(signal);
      stopWatching();
      own?.close();
    },
  };
}

/** The client's own default: an ack that has not come within 5 s is a failed publish (retried with backoff). */
const PUBLISH_TIMEOUT = { timeoutMs: 5_000 };

const streamsOf = (deps: OutboxWorkerDeps) => [deps.stream, ...(deps.otherStreams ?? [])];

/** Retries until every stream is in place (or the worker stops); logs the first failure of a run only. */
async function ensureStream(nc: NatsConnection, deps: OutboxWorkerDeps, log: Logger, signal: AbortSignal) {
  let failures = 0;
  while (!signal.aborted) {
    try {
      const jsm = await jetstreamManager(nc);
      for (const stream of streamsOf(deps)) {
        const outcome = await ensureEntitlementStream(jsm, stream);
        log.info({ stream: stream.stream, subject: stream.subject, outcome }, "JetStream stream ready");
      }
      return true;
    } catch (error) {
      if (++failures === 1)
        log.warn({ err: error, stream: deps.stream.stream }, "JetStream stream not ready; retrying");
      await sleep(deps.settings.pollIntervalMs, signal);
    }
  }
  return false;
}
