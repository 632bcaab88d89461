// The delivery loop: woken at once when the consumer stores notifications, polling as the safety net, never dying
// on a transient error (logged once, counted, retried after the poll interval). Deliveries run independently, at most
// `batchSize` in flight: a slow or hanging receiver holds only its own slot (one hung webhook used to hold every
// delivery for its whole timeout, on each retry), and freed slots are refilled by the next claim.
import type { Waker, Worker } from "../../shared/runtime.ts";
import type { DeliveryDeps } from "./deps.ts";
import { countBacklog } from "./queries.ts";
import { createSentRecorder } from "./sent.ts";
import { claimDue, deliverOne } from "./service.ts";

export function createDeliveryWorker(deps: DeliveryDeps & { waker: Waker; pollIntervalMs: number }): Worker {
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
      const inFlight = new Set<Promise<void>>();
      let failures = 0;
      let countedAt = Number.NEGATIVE_INFINITY;
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
          // Otherwise the count reads every due row (9.5 ms at 20,000, EXPLAIN ANALYZE), and in a backlog every claim
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
        // Every free slot taken means more is probably due: go again (after a slot frees) without waiting.
        if (claimed < free || failures > 0) await d.waker.wait(d.pollIntervalMs, signal);
      }
      // Shutdown: the deliveries in hand finish (each is bounded by the channel's timeout) and are finalized.
      await Promise.all(inFlight);
    },
  };
}
