// Planner statistics of outbox_events, refreshed by the relay when its claims show they are stale.

import type { RelayDeps } from "./batch.ts";
import { analyzeOutbox } from "./queries.ts";

/**
 * A full claim slower than this means the planner misjudges the backlog: statistics taken while the table held no
 * PENDING rows make it read and sort every PENDING row (a bitmap scan) instead of stopping after one batch on
 * outbox_fresh_idx, until autoanalyze comes round: a claim then takes tens of milliseconds instead of under one
 * (docs/benchmarks.md). The relay then runs `analyze`, at most once per ANALYZE_INTERVAL_MS.
 */
const SLOW_CLAIM_MS = 20;
const ANALYZE_INTERVAL_MS = 60_000;

/**
 * Returns what the relay calls after every full claim with its duration: a slow one runs `analyze` in the background
 * (no lane waits for it; a failure is only logged, autoanalyze remains).
 */
export function createStatisticsRefresher(deps: Pick<RelayDeps, "sql" | "log">): (claimMs: number) => void {
  let analyzedAt = Number.NEGATIVE_INFINITY;
  return (claimMs) => {
    const at = performance.now();
    if (claimMs <= SLOW_CLAIM_MS || at - analyzedAt < ANALYZE_INTERVAL_MS) return;
    analyzedAt = at;
    analyzeOutbox(deps.sql).then(
      () => deps.log.info({ claim_ms: Math.round(claimMs) }, "slow outbox claim: planner statistics refreshed"),
      (error) => deps.log.warn({ err: error }, "analyze outbox_events failed"),
    );
  };
}
