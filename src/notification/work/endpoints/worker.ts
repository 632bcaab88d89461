// The endpoint delivery loop, on the one claim loop (../claim-loop.ts). Where it differs from the channel's: each
// endpoint has at most `perEndpoint` deliveries in flight, so one that hangs holds only its own slots until the request
// timeout and one with a backlog never takes another's turn (the claim gives every other endpoint its slots,
// delivery-queries.ts); a slot is freed when the endpoint answered, before the outcome is recorded, and wakes the loop
// when the endpoint has more due (../keyed-slots.ts, as the push loop's); and while no endpoint is enabled it sleeps
// through this process's wakes. Woken at once when this process stores notifications or when another process NOTIFYs
// (a replay, an endpoint created or enabled).
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import { idleSleepMs } from "../../../shared/periodic.ts";
import type { Waker, Worker } from "../../../shared/runtime.ts";
import { ENDPOINT_DUE_CHANNEL } from "../../features/endpoints/queries.ts";
import type { NotificationMetrics } from "../../metrics.ts";
import { createKeyedSlots, type KeyedSlots, runSlottedClaimLoop } from "../keyed-slots.ts";
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

/** Frees a delivery's slot once, however many of its paths end it. */
function releaser(slots: KeyedSlots, id: string): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    slots.release(id);
  };
}

/** Runs one claimed delivery (its slot already taken by the claim) and counts its outcome; never rejects. */
function deliver(d: EndpointWorkerDeps, slots: KeyedSlots, delivery: ClaimedDelivery): Promise<void> {
  const release = releaser(slots, delivery.endpointId);
  return deliverToEndpoint(d, delivery, release)
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
    .finally(release);
}

/**
 * Whether any endpoint was enabled when the idle worker last looked; undefined until it looks, and again from every
 * NOTIFY on the channel (an endpoint created or enabled elsewhere) until the next look. `seen` counts those NOTIFYs, so
 * a look that was under way when one came is not trusted. While none is, the loop is `quiet`: this process's wakes
 * (notifications stored, which fanned out to nobody) are slept through; each used to cost a claim and a look.
 */
type Presence = { anyEnabled: boolean | undefined; seen: number };

async function idleEndpointSleepMs(d: EndpointWorkerDeps, presence: Presence): Promise<number> {
  if (d.idlePollMs <= d.pollIntervalMs) return d.pollIntervalMs;
  const seen = presence.seen;
  const look = await lookWhileIdle(d.sql).catch(() => null);
  if (look && presence.seen === seen) presence.anyEnabled = look.anyEnabled;
  const next = look?.nextDueAt ?? undefined;
  return idleSleepMs(d.now().getTime(), next, { pollMs: d.pollIntervalMs, idleMs: d.idlePollMs });
}

export function createEndpointDeliveryWorker(deps: EndpointWorkerDeps): Worker {
  const log: Logger = deps.log.child({ component: "endpoint-delivery", worker_id: deps.workerId });
  const d = { ...deps, log };
  return {
    name: "endpoint-delivery",
    run: (signal) => {
      // A slot is freed when its endpoint answered, before the outcome is recorded; an endpoint with more due that
      // frees half its slots wakes the loop to claim again (../keyed-slots.ts).
      const slots = createKeyedSlots(d.perEndpoint, () => d.waker.wake());
      const presence: Presence = { anyEnabled: undefined, seen: 0 };
      return runSlottedClaimLoop(
        d,
        slots,
        {
          label: "endpoint delivery",
          channel: ENDPOINT_DUE_CHANNEL,
          claim: claimDeliveries,
          keyOf: (delivery) => delivery.endpointId,
          run: (delivery) => deliver(d, slots, delivery),
          idleSleepMs: () => idleEndpointSleepMs(d, presence),
          quiet: () => presence.anyEnabled === false,
          onNotify: () => {
            presence.seen++;
            presence.anyEnabled = undefined;
          },
        },
        signal,
      );
    },
  };
}
