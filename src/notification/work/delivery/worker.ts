// The configured channel's delivery loop, on the one claim loop (../claim-loop.ts): woken at once when the consumer
// stores notifications, and by a NOTIFY on its channel when another process makes rows due (a requeue). Idle, it
// sleeps until the next scheduled retry or lease expiry it reads from the table, at most the idle poll interval: a
// fixed 1 s poll cost an idle Notification about 3 of its core-ms every second. At most `batchSize` deliveries in
// flight: a slow or hanging receiver holds only its own slot (one hung webhook used to hold every delivery for its
// whole timeout, on each retry), and freed slots are refilled by the next claim.
import type { Logger } from "../../../shared/logger.ts";
import { idleSleepMs } from "../../../shared/periodic.ts";
import type { Waker, Worker } from "../../../shared/runtime.ts";
import type { HandedOff, Handoff } from "../../intake/consumer/batch.ts";
import { runClaimLoop, runInSlots } from "../claim-loop.ts";
import type { DeliveryDeps } from "./deps.ts";
import { type ClaimedNotification, countBacklog, DELIVERY_CHANNEL, nextDueAt } from "./queries.ts";
import { createSentRecorder } from "./sent.ts";
import { claimDue, deliverOne } from "./service.ts";

/**
 * How long a sent notification's SENT mark waits for others to share its statement (sent.ts): at a steady trickle the
 * notifications of several claims are then marked together, instead of one statement each after the claim's. The send
 * is not held, nor the next claim, only the update that records it (sent_at is still the send's time); the claim loop
 * sends the marks at once when it waits for the slots they hold, and a worker that dies in the wait leaves the rows
 * PROCESSING until their lease ends (sent once more, as when it dies before any mark).
 */
export const SENT_LINGER_MS = 20;

type LoopDeps = DeliveryDeps & {
  waker: Waker;
  pollIntervalMs: number;
  /** Longest sleep while idle (default: the poll interval, i.e. a fixed poll). */
  idlePollMs?: number;
  /** How long SENT marks wait for others' (default SENT_LINGER_MS). */
  sentLingerMs?: number;
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
 * A claim that took fewer than it asked for took every row due: the backlog is empty without counting it. Otherwise
 * the count reads every due row (docs/benchmarks.md), and in a backlog every claim is full: once per poll interval is
 * enough for a gauge.
 */
function backlogGauge(d: LoopDeps): (claimed: number, free: number) => Promise<void> {
  let countedAt = Number.NEGATIVE_INFINITY;
  return async (claimed, free) => {
    if (claimed < free) d.metrics.backlog.set(0);
    else if (performance.now() - countedAt >= d.pollIntervalMs) {
      countedAt = performance.now();
      d.metrics.backlog.set(Math.max(0, await countBacklog(d.sql, d.now())));
    }
  };
}

/** The delivery loop, which also takes the notifications the consumer stores leased to it (intake Handoff). */
export type DeliveryWorker = Worker & Handoff;

/** A handed-off notification as a claim would have returned it: its first attempt counted, no end. */
const asClaimed = (n: HandedOff): ClaimedNotification => ({ ...n, attemptCount: 1, expiresAt: null });

/**
 * The consumer's side of the delivery (intake Handoff): a lease while every notification of the batch has a free slot
 * and the loop runs, and the stored notifications sent in those slots, as if claimed. Adopted after the loop stopped,
 * they are left leased, and a worker claims them when the lease ends.
 */
function handoffOf(
  d: DeliveryDeps,
  slots: { inFlight: Set<Promise<void>>; running: () => boolean; deliver: (n: ClaimedNotification) => Promise<void> },
): Handoff {
  return {
    lease: (count) =>
      slots.running() && d.batchSize - slots.inFlight.size >= count
        ? { lockedBy: d.workerId, leaseUntil: new Date(d.now().getTime() + d.leaseMs) }
        : undefined,
    adopt: (notifications) => {
      if (slots.running()) runInSlots(slots.inFlight, slots.deliver, notifications.map(asClaimed));
    },
  };
}

export function createDeliveryWorker(deps: LoopDeps): DeliveryWorker {
  const log: Logger = deps.log.child({ component: "delivery", worker_id: deps.workerId });
  const d = {
    ...deps,
    log,
    recordSent:
      deps.recordSent ??
      createSentRecorder({ sql: deps.sql, lockedBy: deps.workerId, lingerMs: deps.sentLingerMs ?? SENT_LINGER_MS }),
  };
  const inFlight = new Set<Promise<void>>();
  let running = false;
  const deliver = (n: ClaimedNotification) =>
    deliverOne(d, n).catch((error) => log.error({ err: error, notification_id: n.notificationId }, "delivery failed"));
  return {
    name: "delivery",
    ...handoffOf(d, { inFlight, running: () => running, deliver }),
    run: async (signal) => {
      running = true;
      const stop = () => {
        running = false;
      };
      signal.addEventListener("abort", stop, { once: true });
      await runClaimLoop(
        {
          label: "delivery",
          sql: d.sql,
          log,
          waker: d.waker,
          channel: DELIVERY_CHANNEL,
          pollIntervalMs: d.pollIntervalMs,
          slots: d.batchSize,
          // Claim again once half the slots are free, not at every single completion: a claim per freed slot would
          // cost a round trip per delivery under load.
          refillAt: Math.ceil(d.batchSize / 2),
          claim: (free) => claimDue(d, free),
          run: deliver,
          afterClaim: backlogGauge(d),
          onSlotsFull: () => void d.recordSent.flush(),
          idleSleepMs: () => idleDeliverySleepMs(d).catch(() => d.pollIntervalMs),
          inFlight,
        },
        signal,
      );
    },
  };
}
