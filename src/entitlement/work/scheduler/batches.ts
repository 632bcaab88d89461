// One kind's batch of a pass: its claim, sized by how full the last ones came back and issued ahead while the
// previous batch executes, the exhausted items reported, and the rest executed (execute.ts).
import type { CommittedWork } from "../../features/commands/committed.ts";
import { type ExecuteDeps, executeClaimed } from "./execute.ts";
import type { ClaimedItem, DueWorkKind } from "./kind.ts";

/** What a batch needs of the scheduler's deps (scheduler.ts SchedulerDeps has it). */
export type BatchDeps = ExecuteDeps & {
  settings: ExecuteDeps["settings"] & { batchSize: number; maxBatchSize?: number; leaseMs: number };
  onCommitted?: (work: CommittedWork) => void;
};

export type PassReport = { claimed: number; executed: number; full: boolean };

export type Batches = {
  /** Claims and executes one batch of `kind`; `claimAhead`: a full batch claims the next one meanwhile. */
  run(kind: DueWorkKind, claimAhead: boolean): Promise<PassReport>;
  /** True while a claim issued ahead holds leases for `kind`. */
  holdsAhead(kind: DueWorkKind): boolean;
};

export function createBatches(deps: BatchDeps): Batches {
  const { settings } = deps;
  /**
   * Each kind's next claim size: twice the last one while claims come back full, up to maxBatchSize, and the
   * configured size again after one that is not. A burst (2,000 expiries due at one instant) then takes a few passes
   * instead of twenty, each with fewer claims and lane commits per item, while a trickle keeps small batches.
   */
  const sizes = new Map<string, number>();
  const maxBatch = Math.max(settings.batchSize, settings.maxBatchSize ?? 0);
  /**
   * A kind's next claim, issued while the current batch executes: in a burst the claim of the next batch overlaps
   * the lanes of this one, so the scheduler never waits for a claim between two full batches.
   */
  const ahead = new Map<string, Promise<ClaimedItem[]>>();

  /** The kind's batch (claimed ahead by the last pass, or now), and whether it came back full. */
  async function nextBatch(kind: DueWorkKind, claimAhead: boolean): Promise<{ items: ClaimedItem[]; full: boolean }> {
    const size = sizes.get(kind.name) ?? settings.batchSize;
    const claimed = ahead.get(kind.name);
    ahead.delete(kind.name);
    const items = await (claimed ?? claim(deps, kind, size));
    const full = items.length === size;
    const next = full ? Math.min(size * 2, maxBatch) : settings.batchSize;
    sizes.set(kind.name, next);
    if (full && claimAhead) {
      const early = claim(deps, kind, next);
      early.catch(() => {}); // awaited by the next pass, which reports a failure
      ahead.set(kind.name, early);
    }
    return { items, full };
  }

  async function run(kind: DueWorkKind, claimAhead: boolean): Promise<PassReport> {
    const { items, full } = await nextBatch(kind, claimAhead);
    reportExhausted(deps, kind, items);
    const executed = await executeClaimed(
      deps,
      kind,
      items.filter((i) => !i.exhausted),
    );
    if (executed > 0) deps.onCommitted?.({ events: true });
    return { claimed: items.length, executed, full: full || ahead.has(kind.name) };
  }

  return { run, holdsAhead: (kind) => ahead.has(kind.name) };
}

function claim(deps: BatchDeps, kind: DueWorkKind, limit: number): Promise<ClaimedItem[]> {
  const now = deps.now();
  return kind.claim(deps.sql, {
    now,
    leaseUntil: new Date(now.getTime() + deps.settings.leaseMs),
    lockedBy: deps.lockedBy,
    limit,
    maxAttempts: deps.settings.maxAttempts,
  });
}

/** The items the claim ended FAILED (every attempt was claimed and never finalized): counted and logged, not run. */
function reportExhausted(deps: BatchDeps, kind: DueWorkKind, items: ClaimedItem[]): void {
  const exhausted = items.filter((i) => i.exhausted);
  if (exhausted.length === 0) return;
  deps.metrics.count(kind.name, "failed", exhausted.length);
  deps.log.error(
    { kind: kind.name, ids: exhausted.map((i) => i.id) },
    "scheduled items FAILED: every attempt was claimed and never finalized",
  );
}
