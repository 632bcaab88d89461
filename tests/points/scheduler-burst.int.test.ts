// The scheduler in a burst (many items due at one instant) against a real PostgreSQL: claims double while they come
// back full and go back to the configured size after, and the next claim runs while the current batch executes.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { Registry } from "prom-client";
import { pointReservationsDue } from "../../src/entitlement/work/points/due-work.ts";
import type { DueWorkKind } from "../../src/entitlement/work/scheduler/kind.ts";
import { createSchedulerMetrics } from "../../src/entitlement/work/scheduler/metrics.ts";
import { createScheduler } from "../../src/entitlement/work/scheduler/scheduler.ts";
import { createWakeups } from "../../src/entitlement/work/wakeups.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import {
  ledgerProblems,
  POINTS_DATABASE,
  POINTS_SUBJECT,
  reserve,
  schedulerSettings,
  statusCounts,
} from "./helpers.ts";

setDefaultTimeout(90_000);

const f = useTestDatabase("burst", POINTS_DATABASE);

type Trace = { limits: number[]; overlapped: number; executing: number };

/** The point reservations kind, recording each claim's limit and whether it came back while a batch was executing. */
function tracedKind(trace: Trace): DueWorkKind {
  const kind = pointReservationsDue({ subject: POINTS_SUBJECT }) as DueWorkKind;
  return {
    ...kind,
    claim: async (db, args) => {
      trace.limits.push(args.limit);
      const items = await kind.claim(db, args);
      if (trace.executing > 0) trace.overlapped += 1;
      return items;
    },
    // Each execution takes a little longer, so a batch's lanes are still running when a claim issued with it returns.
    execute: async (tx, item, ctx) => {
      trace.executing += 1;
      try {
        await Bun.sleep(20);
        return await kind.execute(tx, item, ctx);
      } finally {
        trace.executing -= 1;
      }
    },
  };
}

describe("a burst of due items", () => {
  test("claims double up to the maximum while full, overlap the batch in hand, and shrink back afterwards", async () => {
    const at = new Date(Date.now() - 1_000);
    await Promise.all(
      Array.from({ length: 700 }, (_, i) => reserve(f.sql, { userId: `user-${i % 70}`, amount: 1, executeAt: at })),
    );
    const trace: Trace = { limits: [], overlapped: 0, executing: 0 };
    const registry = new Registry();
    const kinds = [tracedKind(trace)];
    const scheduler = createScheduler({
      sql: f.sql,
      log: silentLogger,
      now: () => new Date(),
      metrics: createSchedulerMetrics(registry, f.sql, kinds, () => new Date()),
      settings: schedulerSettings({ batchSize: 50, maxBatchSize: 200, pollIntervalMs: 200 }),
      lockedBy: "burst",
      kinds,
      wakeups: createWakeups({ sql: f.sql, log: silentLogger, retryMs: 200 }),
    });
    const stop = new AbortController();
    const loop = scheduler.run(stop.signal);
    try {
      await waitUntil(async () => (await statusCounts(f.sql)).DONE === 700, "all 700 reservations DONE");
      await Bun.sleep(500); // a few more polls with nothing due
    } finally {
      stop.abort();
      await loop;
    }
    const points = trace.limits;
    expect(points.slice(0, 4), "each full claim doubles the next, up to the maximum").toEqual([50, 100, 200, 200]);
    expect(Math.max(...points), "never past the maximum").toBe(200);
    expect(points.at(-1), "nothing due: back to the configured size").toBe(50);
    expect(trace.overlapped, "claims came back while the previous batch was executing").toBeGreaterThan(0);
    expect(await ledgerProblems(f.sql)).toEqual([]);
  });
});
