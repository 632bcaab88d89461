// Shared fixtures of the points tests: a database per file, reservations written with the API's own query, and
// schedulers wired as the service wires them (with their own locked_by, so two of them are two replicas).
import { Registry } from "prom-client";
import { idempotencyLockKey } from "../../src/entitlement/features/commands/lock-key.ts";
import { createSchedulerMetrics } from "../../src/entitlement/work/scheduler/metrics.ts";
import {
  createScheduler,
  type Scheduler,
  type SchedulerSettings,
} from "../../src/entitlement/work/scheduler/scheduler.ts";
import { createWakeups } from "../../src/entitlement/work/wakeups.ts";
import { dueWorkKinds } from "../../src/entitlement/workers.ts";
import { reservePoints } from "../../src/entitlement/write/reserve-points.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import type { Clock } from "../../src/shared/runtime.ts";
import { otherReplica } from "../support/wakeups.ts";

export const POINTS_SUBJECT = "points.events";

/** The database of a points test file (useTestDatabase): Entitlement's schema, emptied before each test. */
export const POINTS_DATABASE = { service: "entitlement", poolMax: 20, resetEach: true } as const;

export function schedulerSettings(overrides: Partial<SchedulerSettings> = {}): SchedulerSettings {
  return {
    pollIntervalMs: 1_000,
    batchSize: 100,
    concurrency: 4,
    leaseMs: 30_000,
    maxAttempts: 3,
    errorMessageMaxLength: 1000,
    backoff: { baseMs: 10, maxMs: 50, minMs: 10, exponentBase: 2, jitterMin: 1, jitterMax: 1 },
    ...overrides,
  };
}

export type Replica = { scheduler: Scheduler; registry: Registry; stop: () => Promise<void>; lockedBy: string };

/** A scheduler with the registered kinds; `start` runs its loop until `stop`. */
export function createReplica(
  sql: Sql,
  lockedBy: string,
  overrides: Partial<SchedulerSettings> = {},
  options: { now?: Clock; subject?: string } = {},
): Replica & { start: () => void } {
  const registry = new Registry();
  const clock = options.now ?? (() => new Date());
  const kinds = dueWorkKinds({ points: { subject: options.subject ?? POINTS_SUBJECT } });
  const scheduler = createScheduler({
    sql,
    log: silentLogger,
    now: clock,
    metrics: createSchedulerMetrics(registry, sql, kinds, clock),
    settings: schedulerSettings(overrides),
    lockedBy,
    kinds,
    wakeups: createWakeups({ sql, log: silentLogger, retryMs: 1_000 }),
  });
  const controller = new AbortController();
  let running: Promise<void> = Promise.resolve();
  return {
    scheduler,
    registry,
    lockedBy,
    start: () => {
      running = scheduler.run(controller.signal);
    },
    stop: async () => {
      controller.abort();
      await running;
    },
  };
}

let seq = 0;

/** A PENDING reservation, written by the call POST /v1/points/reservations makes. */
export async function reserve(
  sql: Sql,
  r: { userId: string; amount: number; executeAt: Date; reason?: string },
): Promise<string> {
  const reservationId = crypto.randomUUID();
  const key = `reserve-${reservationId}`;
  const now = new Date();
  const reservation = {
    reservationId,
    userId: r.userId,
    pointAmount: r.amount,
    executeAt: r.executeAt,
    reason: r.reason ?? `test-${++seq}`,
  };
  const result = await reservePoints(sql, {
    ...reservation,
    traceId: crypto.randomUUID(),
    now,
    idempotency: {
      caller: "test",
      key,
      lockKey: idempotencyLockKey(key),
      requestHash: key,
      recordExpiresAt: new Date(now.getTime() + 60_000),
      lockTimeoutMs: 5_000,
    },
  });
  if (result.outcome !== "applied") throw new Error(`reserve: ${result.outcome}`);
  otherReplica(sql).committed({ events: false, dueAt: r.executeAt });
  return reservationId;
}

export async function statusCounts(sql: Sql): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from point_reservations group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** The ledger's invariants: one transaction and one event per DONE reservation, balances equal to the sums. */
export async function ledgerProblems(sql: Sql): Promise<string[]> {
  const problems: string[] = [];
  const [t] = await sql<{ done: number; txs: number; events: number; dup: number }[]>`
    select (select count(*) from point_reservations where status = 'DONE')::int as done,
           (select count(*) from point_transactions)::int as txs,
           (select count(*) from outbox_events where event_type = 'PointsGranted')::int as events,
           (select count(*) from (select reservation_id from point_transactions group by 1 having count(*) > 1) d)::int
             as dup`;
  if (t?.done !== t?.txs) problems.push(`${t?.done} DONE reservations but ${t?.txs} transactions`);
  if (t?.events !== t?.txs) problems.push(`${t?.txs} transactions but ${t?.events} PointsGranted events`);
  if (t?.dup) problems.push(`${t.dup} reservations granted more than once`);
  const wrong = await sql<{ user_id: string }[]>`
    select b.user_id from point_balances b
    left join (select user_id, sum(point_amount) as s from point_reservations where status = 'DONE' group by 1) r
      using (user_id)
    where b.balance <> coalesce(r.s, 0)`;
  if (wrong.length) problems.push(`balances differ from the DONE sums for ${wrong.length} users`);
  const early = await sql`select 1 from point_reservations where executed_at < execute_at`;
  if (early.length) problems.push(`${early.length} reservations executed before execute_at`);
  return problems;
}
