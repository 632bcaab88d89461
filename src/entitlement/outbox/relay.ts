// The relay loop: a batch as soon as a new event commits (LISTEN entitlement_outbox), the poll interval as the safety
// net, the next batch at once after a full one. While claims come back full (a backlog), up to `concurrency` lanes
// each run claim → publish → finalize at once, so claims, publishes and finalizes of different batches overlap; each
// batch keeps its own lease, heartbeat and guarded finalize, and the claim's `skip locked` keeps the lanes apart.
// Batches may therefore complete out of order (docs/decisions.md). An idle relay runs one lane, so a single new event
// costs one claim, not one per lane. It never dies: a failed batch is logged once per run of failures, counted, and
// retried after the poll interval. On abort no lane claims again; every batch in flight is finished, then it returns.

import { Waker, type Worker } from "../../shared/runtime.ts";
import {
  type BatchReport,
  claimBatch,
  failExhaustedClaims,
  publishClaimedBatch,
  type RelayDeps,
  relayOutboxBatch,
} from "./batch.ts";
import { listenForOutbox } from "./listen.ts";
import { createStatisticsRefresher } from "./statistics.ts";

export type OutboxRelay = Worker & {
  /** One claim → publish → finalize pass, for tests and operators. */
  runOnce(): Promise<BatchReport>;
  /** Claim now rather than at the next poll (a reconnect, a notification). */
  wake(): void;
};

export function createOutboxRelay(deps: RelayDeps): OutboxRelay {
  const waker = new Waker();
  const lanes = new Set<Promise<void>>();
  const noteFullClaim = createStatisticsRefresher(deps);
  let failures = 0;

  /** The extra lanes of a backlog; each stops at its first batch that is not full. */
  const spawnLanes = (signal: AbortSignal) => {
    while (lanes.size < deps.settings.concurrency - 1) {
      const lane: Promise<void> = (async () => {
        while (!signal.aborted && (await pass(signal, false)));
      })().finally(() => lanes.delete(lane));
      lanes.add(lane);
    }
  };

  /** Claims and publishes one batch; true when the claim was full (more is probably due). */
  async function claimAndPublish(signal: AbortSignal): Promise<boolean> {
    const started = performance.now();
    const { rows, claimedAt } = await claimBatch(deps);
    const full = rows.length === deps.settings.batchSize;
    if (full) noteFullClaim(performance.now() - started);
    if (full && !signal.aborted) spawnLanes(signal);
    await publishClaimedBatch(deps, rows, claimedAt);
    return full;
  }

  /** One batch when NATS is up (the main lane then also fails exhausted claims). Never throws. */
  async function pass(signal: AbortSignal, main: boolean): Promise<boolean> {
    try {
      const full = deps.isConnected() ? await claimAndPublish(signal) : false;
      if (main && !full) await failExhaustedClaims(deps);
      if (failures > 0) deps.log.info({ failures }, "outbox relay recovered");
      failures = 0;
      return full;
    } catch (error) {
      failures += 1;
      deps.metrics.countRelayError();
      if (failures === 1) deps.log.warn({ err: error }, "outbox relay batch failed; retrying every poll interval");
      return false;
    }
  }

  async function run(signal: AbortSignal): Promise<void> {
    const stopListening = listenForOutbox(deps, () => waker.wake(), signal);
    while (!signal.aborted) {
      if (!(await pass(signal, true))) await waker.wait(deps.settings.pollIntervalMs, signal);
    }
    await Promise.all(lanes);
    await stopListening();
  }

  return { name: "outbox-relay", run, runOnce: () => relayOutboxBatch(deps), wake: () => waker.wake() };
}
