// The loop every JetStream reader of this service runs: set up the stream and durable, consume, hand the messages over
// in batches, and start again after any failure (NATS outage, deleted consumer, closed connection) until aborted.
import type { Consumer, ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "../../../shared/logger.ts";
import type { NatsConnection, NatsLink } from "../../../shared/nats.ts";
import { sleep, type Worker } from "../../../shared/runtime.ts";
import { createQueue, trackInHand } from "./in-hand.ts";

export type PullLoop = {
  /** Ensures the stream and the durable exist and returns the consumer to read. */
  prepare: () => Promise<Consumer>;
  batchSize: number;
  /** The durable's ack wait: every message in hand is kept in progress well within it (in-hand.ts). */
  ackWaitMs: number;
  /** Idle heartbeat of the pull requests; two missed ones start a new pull (default: half the expiry, 15 s). */
  heartbeatMs?: number;
  /** Handles one batch; it settles every message itself (ack, nak or term) and should not throw. */
  handle: (messages: JsMsg[], signal: AbortSignal) => Promise<void>;
  /** Told true once reading, false when the consumer is gone or the loop is between attempts. */
  onBound?: (bound: boolean) => void;
  log: Logger;
  retryMs?: number;
};

/** The durable or its stream is gone: end this session so the loop creates them again. */
const GONE = new Set(["consumer_not_found", "stream_not_found", "consumer_deleted"]);

function watchStatus(messages: ConsumerMessages, loop: PullLoop): void {
  void (async () => {
    for await (const s of messages.status()) {
      if (GONE.has(s.type)) {
        loop.onBound?.(false);
        loop.log.warn({ status: s.type }, "JetStream consumer is gone, setting it up again");
        void messages.close();
      } else if (s.type === "heartbeats_missed") {
        loop.onBound?.(false);
        loop.log.warn({ status: s.type }, "JetStream consumer not reachable");
      } else if (s.type === "next" || s.type === "heartbeat") {
        loop.onBound?.(true);
      }
    }
  })().catch(() => {});
}

const IDLE = Symbol("idle");

/**
 * Groups what the iterator already holds into batches of up to `max`, without waiting for more: a lone event is
 * handled at once, a burst in large transactions. (QueuedIterator.getPending() over-counts after status callbacks,
 * so it cannot tell whether more is buffered; a zero-delay race can, because buffered items resolve as microtasks.)
 */
export async function* inBatches<T>(source: AsyncIterable<T>, max: number): AsyncGenerator<T[]> {
  const it = source[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<T>> | undefined;
  for (;;) {
    const first = await (pending ?? it.next());
    pending = undefined;
    if (first.done) return;
    const batch = [first.value];
    while (batch.length < max) {
      pending = it.next();
      const next = await Promise.race([pending, new Promise<typeof IDLE>((r) => setTimeout(r, 0, IDLE))]);
      if (next === IDLE) break;
      pending = undefined;
      if (next.done) {
        yield batch;
        return;
      }
      batch.push(next.value);
    }
    yield batch;
  }
}

/**
 * How long one pull request stays open (the client's default). An idle reader is woken by the server's heartbeats
 * and by the expiry, each followed by the client's own checks: with 5 s pulls and 2.5 s heartbeats the five readers
 * woke an idle Notification about 6 times a second (strace), with 30 s and 5 s about 4.8, and it spent roughly a
 * quarter less CPU. When a node of a NATS cluster dies with the consumer's leader on it, the new leader never got the
 * open pull request, and nothing arrives until the client misses two heartbeats (the drill's "nats leader kill -9
 * (R3)" took 33 s with the client's default 15 s heartbeats): the heartbeat, not the expiry, bounds that wait.
 */
const PULL_EXPIRES_MS = 30_000;

/** Heartbeats of an event reader: a lost pull request is noticed within 10 s. */
export const EVENT_HEARTBEAT_MS = 5_000;

/**
 * Reads one consume() session until it ends (shutdown, closed connection, durable gone). Messages arrive through the
 * callback, so each is in hand, and kept in progress, from the moment it is received: the client keeps pulling while
 * a batch is worked, and a message waiting in its buffer would otherwise be redelivered after the ack wait.
 */
async function consumeOnce(loop: PullLoop, signal: AbortSignal): Promise<void> {
  const consumer = await loop.prepare();
  const inHand = trackInHand(loop.ackWaitMs);
  const queue = createQueue<JsMsg>();
  const messages = await consumer.consume({
    max_messages: loop.batchSize,
    expires: PULL_EXPIRES_MS,
    idle_heartbeat: loop.heartbeatMs ?? PULL_EXPIRES_MS / 2,
    callback: (message) => {
      inHand.add(message);
      queue.push(message);
    },
  });
  void messages.closed().then(queue.end, queue.end);
  const stop = () => void messages.close();
  signal.addEventListener("abort", stop, { once: true });
  if (signal.aborted) stop();
  loop.onBound?.(true);
  watchStatus(messages, loop);
  try {
    for await (const batch of inBatches<JsMsg>(queue, loop.batchSize)) {
      try {
        await loop.handle(batch, signal);
      } finally {
        inHand.release(batch);
      }
    }
  } finally {
    inHand.clear();
    signal.removeEventListener("abort", stop);
  }
}

/** Runs until `signal` aborts; never throws. */
export async function runPullLoop(loop: PullLoop, signal: AbortSignal): Promise<void> {
  const retryMs = loop.retryMs ?? 1_000;
  let failures = 0;
  while (!signal.aborted) {
    try {
      await consumeOnce(loop, signal);
      failures = 0;
    } catch (error) {
      failures++;
      if (failures === 1 || failures % 30 === 0) {
        loop.log.warn({ err: error, failures }, "JetStream consumer failed, retrying");
      }
    }
    loop.onBound?.(false);
    if (!signal.aborted) await sleep(Math.min(retryMs * Math.max(1, failures), 15_000), signal);
  }
}

/**
 * A JetStream reader as a worker: it waits for NATS (the link), then runs the pull loop `loopOn(nc)` describes until
 * shutdown. Every consumer of this service is one of these (consumer/worker.ts, advisories/worker.ts).
 */
export function createPullWorker(name: string, link: NatsLink, loopOn: (nc: NatsConnection) => PullLoop): Worker {
  return {
    name,
    run: async (signal) => {
      const nc = await link.get(signal);
      if (nc) await runPullLoop(loopOn(nc), signal);
    },
  };
}
