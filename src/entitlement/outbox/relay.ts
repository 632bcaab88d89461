// The relay loop: a batch as soon as a new event commits (LISTEN entitlement_outbox), the poll interval as the safety
// net, the next batch at once after a full one. While claims come back full (a backlog), up to `concurrency` lanes
// each run claim → publish → finalize at once, so claims, publishes and finalizes of different batches overlap; each
// batch keeps its own lease, heartbeat and guarded finalize, and the claim's `skip locked` keeps the lanes apart.
// Batches may therefore complete out of order (docs/decisions.md). An idle relay runs one lane, so a single new event
// costs one claim, not one per lane. It never dies: a failed batch is logged once per run of failures, counted, and
// retried after the poll interval. On abort no lane claims again; every batch in flight is finished, then it returns.

import { sleep, Waker, type Worker } from "../../shared/runtime.ts";
import { type BatchReport, claimBatch, publishClaimedBatch, type RelayDeps, relayOutboxBatch } from "./batch.ts";
import { analyzeOutbox, failExhaustedOutboxClaims, OUTBOX_CHANNEL } from "./queries.ts";

/**
 * A full claim slower than this means the planner misjudges the backlog: statistics taken while the table held no
 * PENDING rows make it read and sort every PENDING row (a bitmap scan) instead of stopping after one batch on
 * outbox_fresh_idx: 35-60 ms a claim instead of 0.4 ms with 80,000 rows pending, until autoanalyze comes round
 * (EXPLAIN ANALYZE in the bench's database after its throughput phases). The relay then runs `analyze`, at most once
 * per ANALYZE_INTERVAL_MS; it takes ~0.25 s on 250,000 rows.
 */
const SLOW_CLAIM_MS = 20;
const ANALYZE_INTERVAL_MS = 60_000;

export type OutboxRelay = Worker & {
  /** One claim → publish → finalize pass, for tests and operators. */
  runOnce(): Promise<BatchReport>;
  /** Claim now rather than at the next poll (a reconnect, a notification). */
  wake(): void;
};

export function createOutboxRelay(deps: RelayDeps): OutboxRelay {
  const waker = new Waker();
  const helpers = new Set<Promise<void>>();
  let failures = 0;
  let analyzedAt = Number.NEGATIVE_INFINITY;

  /** In the background, so no lane waits for it; a failure is only logged (autoanalyze remains). */
  const refreshStatistics = (claimMs: number) => {
    const at = performance.now();
    if (at - analyzedAt < ANALYZE_INTERVAL_MS) return;
    analyzedAt = at;
    analyzeOutbox(deps.sql).then(
      () => deps.log.info({ claim_ms: Math.round(claimMs) }, "slow outbox claim: planner statistics refreshed"),
      (error) => deps.log.warn({ err: error }, "analyze outbox_events failed"),
    );
  };

  /** The extra lanes of a backlog; each stops at its first batch that is not full. */
  const spawnHelpers = (signal: AbortSignal) => {
    while (helpers.size < deps.settings.concurrency - 1) {
      const lane: Promise<void> = (async () => {
        while (!signal.aborted && (await pass(signal, false)));
      })().finally(() => helpers.delete(lane));
      helpers.add(lane);
    }
  };

  /** One batch when NATS is up; true when the claim was full (more is probably due). Never throws. */
  async function pass(signal: AbortSignal, main: boolean): Promise<boolean> {
    try {
      let full = false;
      if (deps.isConnected()) {
        const started = performance.now();
        const { rows, claimedAt } = await claimBatch(deps);
        full = rows.length === deps.settings.batchSize;
        const claimMs = performance.now() - started;
        if (full && claimMs > SLOW_CLAIM_MS) refreshStatistics(claimMs);
        if (full && !signal.aborted) spawnHelpers(signal);
        await publishClaimedBatch(deps, rows, claimedAt);
      }
      if (main && !full) await failExhausted();
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

  async function failExhausted(): Promise<void> {
    const failed = await failExhaustedOutboxClaims(deps.sql, {
      now: deps.now(),
      maxAttempts: deps.settings.maxAttempts,
    });
    if (failed.length) {
      deps.metrics.countPublish("failed", failed.length);
      deps.log.error({ event_ids: failed }, "outbox events FAILED: every attempt was claimed and never finalized");
    }
  }

  async function run(signal: AbortSignal): Promise<void> {
    const stopListening = listen(deps, () => waker.wake(), signal);
    while (!signal.aborted) {
      if (!(await pass(signal, true))) await waker.wait(deps.settings.pollIntervalMs, signal);
    }
    await Promise.all(helpers);
    await stopListening();
  }

  return { name: "outbox-relay", run, runOnce: () => relayOutboxBatch(deps), wake: () => waker.wake() };
}

/** LISTENs in the background, retrying while the database is away; every (re)listen wakes the loop to catch up. */
function listen(deps: RelayDeps, wake: () => void, signal: AbortSignal): () => Promise<void> {
  let unlisten: (() => Promise<void>) | undefined;
  const started = (async () => {
    let failures = 0;
    while (!signal.aborted && !unlisten) {
      try {
        const meta = await deps.sql.listen(OUTBOX_CHANNEL, wake, wake);
        unlisten = meta.unlisten;
      } catch (error) {
        if (++failures === 1) deps.log.warn({ err: error }, `LISTEN ${OUTBOX_CHANNEL} failed; polling meanwhile`);
        await sleep(deps.settings.pollIntervalMs, signal);
      }
    }
  })();
  return async () => {
    await started;
    await unlisten?.().catch(() => {});
  };
}
