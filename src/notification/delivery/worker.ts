// The delivery loop: woken at once when the consumer stores notifications, polling as the safety net, never dying
// on a transient error (logged once, counted, retried after the poll interval).
import type { Waker, Worker } from "../../shared/runtime.ts";
import type { DeliveryDeps } from "./deps.ts";
import { countBacklog } from "./queries.ts";
import { deliverBatch } from "./service.ts";

export function createDeliveryWorker(deps: DeliveryDeps & { waker: Waker; pollIntervalMs: number }): Worker {
  const log = deps.log.child({ component: "delivery", worker_id: deps.workerId });
  const d = { ...deps, log };
  return {
    name: "delivery",
    run: async (signal) => {
      let failures = 0;
      while (!signal.aborted) {
        let claimed = 0;
        try {
          claimed = await deliverBatch(d);
          d.metrics.backlog.set(Math.max(0, await countBacklog(d.sql, d.now())));
          if (failures > 0) log.info({ failures }, "delivery recovered");
          failures = 0;
        } catch (error) {
          failures++;
          if (failures === 1 || failures % 60 === 0) log.error({ err: error, failures }, "delivery round failed");
        }
        // A full batch means more is probably due: go again without waiting.
        if (claimed < d.batchSize || failures > 0) await d.waker.wait(d.pollIntervalMs, signal);
      }
    },
  };
}
