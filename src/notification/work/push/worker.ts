// The push loop, on the one claim loop of every delivery (work/claim-loop.ts). Each push service (a Web Push origin, or
// FCM) has at most `perService` pushes in flight: one that hangs holds only its own slots until the request timeout,
// and the claim gives every other service its slots (queries.ts). Woken when this process stores notifications and
// when a push frees a slot of a service with more due (../keyed-slots.ts), polling as the safety net.
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import { idleSleepMs } from "../../../shared/periodic.ts";
import type { Waker, Worker } from "../../../shared/runtime.ts";
import { contextOfTraceparent, inSpan } from "../../../shared/trace-context.ts";
import type { NotificationMetrics } from "../../metrics.ts";
import { createKeyedSlots, runSlottedClaimLoop } from "../keyed-slots.ts";
import { type Delivered, deliverPush, type PushDeliveryDeps } from "./deliver.ts";
import { createPushRecorder, type PushRecorder } from "./outcomes.ts";
import { type ClaimedPush, claimPushes, deleteGoneDevices, nextPushDueAt } from "./queries.ts";

/** NOTIFYed on by nothing yet: the loop listens so that a replay or a re-registration can wake it later. */
export const PUSH_DUE_CHANNEL = "push_deliveries_due";

export type PushWorkerDeps = PushDeliveryDeps & {
  sql: Sql;
  log: Logger;
  metrics: NotificationMetrics;
  workerId: string;
  waker: Waker;
  leaseMs: number;
  maxInFlight: number;
  perService: number;
  pollIntervalMs: number;
  idlePollMs: number;
};

async function record(d: PushWorkerDeps, recorder: PushRecorder, p: ClaimedPush, delivered: Delivered): Promise<void> {
  const platform = p.platform;
  d.metrics.pushes.inc({ platform, outcome: delivered.result });
  const log = () => d.log.child({ device_id: p.deviceId, notification_id: p.notificationId, platform });
  try {
    if (delivered.gone) {
      await deleteGoneDevices(d.sql, [p.deviceId]);
      log().info({ error: delivered.outcome.error }, "push service says the device is gone: deleted");
      return;
    }
    const changed = await recorder(delivered.outcome);
    if (!changed) log().warn("lease lost before the push's outcome was recorded");
    else if (delivered.outcome.status === "FAILED") log().warn({ error: delivered.outcome.error }, "push FAILED");
  } catch (error) {
    log().error({ err: error }, "could not record a push; it is tried again when its lease ends");
  }
}

export function createPushWorker(deps: PushWorkerDeps): Worker {
  const log = deps.log.child({ component: "push", worker_id: deps.workerId });
  const d = { ...deps, log };
  // A push that ends frees its service's slot and, when the service has more due, wakes the loop (keyed-slots.ts).
  const slots = createKeyedSlots(d.perService, () => d.waker.wake());
  const recorder = createPushRecorder({ sql: d.sql, lockedBy: d.workerId });
  const run = async (p: ClaimedPush) => {
    const attributes = { "notification.id": p.notificationId, "push.platform": p.platform };
    const parent = contextOfTraceparent(p.notification?.traceparent ?? null);
    let delivered: Delivered;
    try {
      delivered = await inSpan("notification push", { parent, attributes }, () => deliverPush(d, p));
    } finally {
      // The service's slot is free once it answered: recording the outcome is the database's work.
      slots.release(p.service);
    }
    await record(d, recorder, p, delivered);
  };
  return {
    name: "push",
    run: (signal) =>
      runSlottedClaimLoop<ClaimedPush>(
        d,
        slots,
        {
          label: "push",
          channel: PUSH_DUE_CHANNEL,
          claim: claimPushes,
          keyOf: (p) => p.service,
          run,
          idleSleepMs: async () => {
            const next = await nextPushDueAt(d.sql).catch(() => null);
            return idleSleepMs(d.now().getTime(), next ?? undefined, {
              pollMs: d.pollIntervalMs,
              idleMs: d.idlePollMs,
            });
          },
        },
        signal,
      ),
  };
}
