// The endpoint delivery loop. Each endpoint has at most `perEndpoint` deliveries in flight: one that hangs holds only
// its own slots until the request timeout, and one with a backlog never takes another's turn; the claim gives every
// other endpoint its slots (delivery-queries.ts). Woken at once when this process stores notifications or when
// another process NOTIFYs (a replay, an endpoint enabled again), polling as the safety net, never dying on a
// transient error.
import type { Sql } from "../../../shared/db.ts";
import { listenInBackground } from "../../../shared/listen.ts";
import type { Logger } from "../../../shared/logger.ts";
import { idleSleepMs } from "../../../shared/periodic.ts";
import type { Waker, Worker } from "../../../shared/runtime.ts";
import { ENDPOINT_DUE_CHANNEL } from "../../features/endpoints/queries.ts";
import type { NotificationMetrics } from "../../metrics.ts";
import type { EndpointDeliveryDeps } from "./deliver.ts";
import { deliverToEndpoint } from "./deliver.ts";
import { type ClaimedDelivery, claimDeliveries, lookWhileIdle } from "./delivery-queries.ts";

export type EndpointWorkerDeps = EndpointDeliveryDeps & {
  sql: Sql;
  metrics: NotificationMetrics;
  workerId: string;
  waker: Waker;
  leaseMs: number;
  /** Deliveries in flight at most, all endpoints together. */
  maxInFlight: number;
  /** Deliveries of one endpoint in flight at most. */
  perEndpoint: number;
  pollIntervalMs: number;
  idlePollMs: number;
};

type Slots = { inFlight: Set<Promise<void>>; perEndpoint: Map<string, number>; mayHaveMore: Set<string> };

function freeOf(d: EndpointWorkerDeps, slots: Slots) {
  return [...slots.perEndpoint].map(([endpointId, n]) => ({ endpointId, free: Math.max(0, d.perEndpoint - n) }));
}

/**
 * Starts one delivery. Its endpoint's slot is free again once the endpoint answered (or failed to): recording the
 * outcome is the database's work, done in groups, and holding the slot through it would keep the endpoint idle for a
 * statement's time. When an endpoint that had more due frees half its slots, the loop is woken to claim again.
 */
function start(d: EndpointWorkerDeps, slots: Slots, delivery: ClaimedDelivery): void {
  const id = delivery.endpointId;
  slots.perEndpoint.set(id, (slots.perEndpoint.get(id) ?? 0) + 1);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    const left = (slots.perEndpoint.get(id) ?? 1) - 1;
    if (left === 0) slots.perEndpoint.delete(id);
    else slots.perEndpoint.set(id, left);
    if (slots.mayHaveMore.has(id) && left <= d.perEndpoint / 2) {
      slots.mayHaveMore.delete(id);
      d.waker.wake();
    }
  };
  const running: Promise<void> = deliverToEndpoint(d, delivery, release)
    .then((outcome) => {
      if (!outcome) return;
      const result = outcome.expired
        ? "expired"
        : outcome.status === "SENT"
          ? "sent"
          : outcome.status === "FAILED"
            ? "failed"
            : "retry_scheduled";
      d.metrics.endpointDelivery.inc({ result });
    })
    .finally(() => {
      release();
      slots.inFlight.delete(running);
    });
  slots.inFlight.add(running);
}

async function claimRound(d: EndpointWorkerDeps, slots: Slots, free: number): Promise<number> {
  const now = d.now();
  // The slots each endpoint was offered, as sent: deliveries may end while the claim runs, so the count in flight when
  // it returns can be lower, and an endpoint that got all it was offered must still be marked as having more.
  const offered = freeOf(d, slots);
  const claimed = await claimDeliveries(d.sql, {
    now,
    leaseUntil: new Date(now.getTime() + d.leaseMs),
    lockedBy: d.workerId,
    limit: free,
    perEndpoint: d.perEndpoint,
    free: offered,
  });
  // Slots offered and not taken, per endpoint: one that got them all may have more due.
  const left = new Map(offered.map((o) => [o.endpointId, o.free]));
  for (const delivery of claimed) {
    const id = delivery.endpointId;
    const n = (left.get(id) ?? d.perEndpoint) - 1;
    left.set(id, n);
    if (n <= 0) slots.mayHaveMore.add(id);
    start(d, slots, delivery);
  }
  return claimed.length;
}

/**
 * Whether any endpoint was enabled when the idle worker last looked; undefined until it looks, and again from every
 * NOTIFY on the channel (an endpoint created or enabled elsewhere) until the next look. `seen` counts those NOTIFYs, so
 * a look that was under way when one came is not trusted.
 */
type Presence = { anyEnabled: boolean | undefined; seen: number };

async function nextDueWhileIdle(d: EndpointWorkerDeps, presence: Presence): Promise<Date | undefined> {
  const seen = presence.seen;
  const look = await lookWhileIdle(d.sql).catch(() => null);
  if (look && presence.seen === seen) presence.anyEnabled = look.anyEnabled;
  return look?.nextDueAt ?? undefined;
}

/**
 * Sleeps `ms`, or less when woken; while no endpoint is enabled, the wakes of this process (notifications stored, which
 * fanned out to nobody) are slept through: only a NOTIFY or the poll ends the sleep. Each such wake used to cost a
 * claim and a look, two statements per stored batch.
 */
async function sleepUnlessWanted(d: EndpointWorkerDeps, presence: Presence, ms: number, signal: AbortSignal) {
  const until = performance.now() + ms;
  await d.waker.wait(ms, signal);
  for (let left = until - performance.now(); presence.anyEnabled === false && left > 0 && !signal.aborted; ) {
    await d.waker.wait(left, signal);
    left = until - performance.now();
  }
}

async function sleepAfterRound(d: EndpointWorkerDeps, presence: Presence, emptyRounds: number, signal: AbortSignal) {
  let ms = d.pollIntervalMs;
  if (emptyRounds >= 2 && d.idlePollMs > d.pollIntervalMs) {
    const next = await nextDueWhileIdle(d, presence);
    ms = idleSleepMs(d.now().getTime(), next, { pollMs: d.pollIntervalMs, idleMs: d.idlePollMs });
  }
  await sleepUnlessWanted(d, presence, ms, signal);
}

export function createEndpointDeliveryWorker(deps: EndpointWorkerDeps): Worker {
  const log: Logger = deps.log.child({ component: "endpoint-delivery", worker_id: deps.workerId });
  const d = { ...deps, log };
  return {
    name: "endpoint-delivery",
    run: async (signal) => {
      const presence: Presence = { anyEnabled: undefined, seen: 0 };
      const wake = () => {
        presence.seen++;
        presence.anyEnabled = undefined;
        d.waker.wake();
      };
      const stopListening = listenInBackground(d.sql, {
        channel: ENDPOINT_DUE_CHANNEL,
        onNotify: wake,
        onListen: wake,
        log,
        retryMs: d.pollIntervalMs,
        signal,
      });
      const slots: Slots = { inFlight: new Set(), perEndpoint: new Map(), mayHaveMore: new Set() };
      let failures = 0;
      let emptyRounds = 0;
      while (!signal.aborted) {
        const free = d.maxInFlight - slots.inFlight.size;
        if (free <= 0) {
          await Promise.race(slots.inFlight);
          continue;
        }
        let claimed = 0;
        try {
          claimed = await claimRound(d, slots, free);
          if (failures > 0) log.info({ failures }, "endpoint delivery recovered");
          failures = 0;
        } catch (error) {
          failures++;
          if (failures === 1 || failures % 60 === 0)
            log.error({ err: error, failures }, "endpoint delivery round failed");
        }
        emptyRounds = claimed === 0 && slots.inFlight.size === 0 && failures === 0 ? emptyRounds + 1 : 0;
        if (claimed >= free && failures === 0) continue;
        await sleepAfterRound(d, presence, emptyRounds, signal);
      }
      await Promise.all(slots.inFlight);
      await stopListening();
    },
  };
}
