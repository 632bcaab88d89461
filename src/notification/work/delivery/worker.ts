// The delivery loop: woken at once when the consumer stores notifications, polling as the safety net, never dying
// on a transient error (logged once, counted, retried after the poll interval). Idle (nothing claimed, nothing in
// flight), it sleeps until the next scheduled retry or lease expiry it reads from the table, at most the idle poll
// interval: a fixed 1 s poll cost an idle Notification about 3 of its core-ms every second. Rows another process
// makes due (a requeue) NOTIFY the channel it LISTENs on. Deliveries run independently, at most
// `batchSize` in flight: a slow or hanging receiver holds only its own slot (one hung webhook used to hold every
// delivery for its whole timeout, on each retry), and freed slots are refilled by the next claim.
import { listenInBackground } from "../../../shared/listen.ts";
import type { Logger } from "../../../shared/logger.ts";
import { idleSleepMs } from "../../../shared/periodic.ts";
import type { Waker, Worker } from "../../../shared/runtime.ts";
import type { DeliveryDeps } from "./deps.ts";
import { countBacklog, DELIVERY_CHANNEL, nextDueAt } from "./queries.ts";
import { createSentRecorder } from "./sent.ts";
import { claimDue, deliverOne } from "./service.ts";

type LoopDeps = DeliveryDeps & {
  waker: Waker;
  pollIntervalMs: number;
  /** Longest sleep while idle (default: the poll interval, i.e. a fixed poll). */
  idlePollMs?: number;
};

/**
 * How long an idle worker sleeps: until the next retry or lease falls due, at most `idlePollMs`. A row already due
 * that the claim did not take (locked by another worker's claim) is looked at again after the poll interval.
 */
async function idleDeliverySleepMs(d: LoopDeps): Promise<number> {
  const idleMs = d.idlePollMs ?? d.pollIntervalMs;
  const next = idleMs > d.pollIntervalMs ? ((await nextDueAt(d.sql)) ?? undefined) : undefined;
  return idleSleepMs(d.now().getTime(), next, { pollMs: d.pollIntervalMs, idleMs });
}

/**
 * Every free slot taken means more is probably due: go again (after a slot frees) without waiting. Otherwise wait the
 * poll interval, or, idle, until the next due time; idle only after two empty rounds in a row: under load a wake
 * often finds its rows already claimed, and a look for the next due time after each would add a statement a round.
 */
async function waitAfterRound(
  d: LoopDeps,
  round: { claimed: number; free: number; failures: number; emptyRounds: number },
  signal: AbortSignal,
): Promise<void> {
  if (round.claimed >= round.free && round.failures === 0) return;
  const ms = round.emptyRounds >= 2 ? await idleDeliverySleepMs(d).catch(() => d.pollIntervalMs) : d.pollIntervalMs;
  await d.waker.wait(ms, signal);
}

/** Wakes the loop when another process NOTIFYs that rows are due (a requeue), and at every (re)listen. */
function listenForDue(d: LoopDeps, log: Logger, signal: AbortSignal): () => Promise<void> {
  const wake = () => d.waker.wake();
  return listenInBackground(d.sql, {
    channel: DELIVERY_CHANNEL,
    onNotify: wake,
    onListen: wake,
    log,
    retryMs: d.pollIntervalMs,
    signal,
  });
}

export function createDeliveryWorker(deps: LoopDeps): Worker {
  const log = deps.log.child({ component: "delivery", worker_id: deps.workerId });
  const d = {
    ...deps,
    log,
    recordSent: deps.recordSent ?? createSentRecorder({ sql: deps.sql, lockedBy: deps.workerId }),
  };
  // Claim again once half the slots are free, not at every single completion: a claim per freed slot would cost a
  // round trip per delivery under load.
  const refillAt = Math.ceil(d.batchSize / 2);
  return {
    name: "delivery",
    run: async (signal) => {
      const stopListening = listenForDue(d, log, signal);
      const inFlight = new Set<Promise<void>>();
      let failures = 0;
      let countedAt = Number.NEGATIVE_INFINITY;
      let emptyRounds = 0;
      while (!signal.aborted) {
        const free = d.batchSize - inFlight.size;
        if (free < refillAt) {
          await Promise.race(inFlight);
          continue;
        }
        let claimed = 0;
        try {
          const due = await claimDue(d, free);
          claimed = due.length;
          for (const n of due) {
            const delivery: Promise<void> = deliverOne(d, n)
              .catch((error) => log.error({ err: error, notification_id: n.notificationId }, "delivery failed"))
              .finally(() => inFlight.delete(delivery));
            inFlight.add(delivery);
          }
          // A claim that took fewer than it asked for took every row due: the backlog is empty without counting it.
          // Otherwise the count reads every due row (docs/benchmarks.md), and in a backlog every claim
          // is full: once per poll interval is enough for a gauge.
          if (claimed < free) d.metrics.backlog.set(0);
          else if (performance.now() - countedAt >= d.pollIntervalMs) {
            countedAt = performance.now();
            d.metrics.backlog.set(Math.max(0, await countBacklog(d.sql, d.now())));
          }
          if (failures > 0) log.info({ failures }, "delivery recovered");
          failures = 0;
        } catch (error) {
          failures++;
          if (failures === 1 || failures % 60 === 0) log.error({ err: error, failures }, "delivery round failed");
        }
        emptyRounds = claimed === 0 && inFlight.size === 0 && failures === 0 ? emptyRounds + 1 : 0;
        await waitAfterRound(d, { claimed, free, failures, emptyRounds }, signal);
      }
      // Shutdown: the deliveries in hand finish (each is bounded by the channel's timeout) and are finalized.
      await Promise.all(inFlight);
      await stopListening();
    },
  };
}
