// Small building blocks of the periodic jobs (both services' retention).
import type postgres from "postgres";
import type { Db } from "./db.ts";
import type { Logger } from "./logger.ts";
import { sleep, type Worker } from "./runtime.ts";

/**
 * Runs `step(limit, resume)` until it handles fewer than `limit` rows (or `signal` aborts) and returns the total: bounded
 * statements, so none holds many row locks for long. Every batch of one run gets the same `resume` (Resume, below), so
 * each starts where the one before stopped.
 */
export async function untilShortBatch(
  step: (limit: number, resume: Resume) => Promise<number>,
  limit: number,
  signal?: AbortSignal,
): Promise<number> {
  const resume: Resume = {};
  let total = 0;
  for (;;) {
    const n = await step(limit, resume);
    total += n;
    if (n < limit || signal?.aborted) return total;
  }
}

/**
 * How long an idle claim/lease worker sleeps (the relay, the delivery worker): until `next` (its next retry time or
 * lease end), at most `idleMs`; the poll interval when something is due already (another worker holds it) or when
 * `idleMs` is not above it (a fixed poll).
 */
export function idleSleepMs(nowMs: number, next: Date | undefined, p: { pollMs: number; idleMs: number }): number {
  if (p.idleMs <= p.pollMs) return p.pollMs;
  return untilNextMs(nowMs, next, { capMs: p.idleMs, dueMs: p.pollMs });
}

/**
 * Milliseconds until `next`, +1 so that a timer firing within the millisecond before finds it due; at most `capMs`,
 * and `capMs` without a next time; `dueMs` when `next` is due already.
 */
export function untilNextMs(nowMs: number, next: Date | undefined, p: { capMs: number; dueMs: number }): number {
  if (!next) return p.capMs;
  const untilDue = next.getTime() - nowMs;
  return untilDue <= 0 ? p.dueMs : Math.min(p.capMs, untilDue + 1);
}

/**
 * Where the previous batch of a retention run stopped: the largest threshold-column value it deleted. The next batch
 * starts there, not at the head of the index, where the entries of the rows just deleted still lie until vacuum.
 */
export type Resume = { from?: Date };

/** The lower bound of a run's first batch: before any time the services write. */
export const BEGINNING = new Date("0001-01-01T00:00:00Z");

/** Keeps the largest value of `column` among the deleted rows in `resume`. */
export function advance(resume: Resume | undefined, rows: readonly Record<string, unknown>[], column: string): void {
  if (!resume) return;
  for (const row of rows) {
    const value = row[column];
    if (value instanceof Date && (!resume.from || value > resume.from)) resume.from = value;
  }
}

/** What one retention delete removes: the rows of `table` that `old` admits, aged by `column`. */
export type RetentionTarget = {
  table: string;
  /** The column the rows are aged by: batches walk its index in order, and `resume` keeps its value. */
  column: string;
  /**
   * The rows that may go; checked again on the row deleted, so a row that changed meanwhile (a key renewed, an event
   * requeued: a new row version) stays.
   */
  old: (db: Db) => postgres.PendingQuery<postgres.Row[]>;
};

/**
 * Deletes at most `limit` rows of the target, oldest first, from where the run's previous batch stopped (`resume`);
 * returns how many. Bounded, so no statement holds locks for long. The rows' physical addresses (ctid) are collected
 * once into an array (an InitPlan): a join on a `limit` subquery may be rescanned per row and then deletes far more
 * than the limit, and deleting by ctid is a TID scan, where deleting by primary key probed the key's index once per
 * row, slow once those pages are not in shared_buffers (both measured: docs/benchmarks.md). A row another transaction
 * holds is skipped, not waited for: the next run takes it.
 */
export async function deleteOldRows(
  db: Db,
  target: RetentionTarget,
  args: { limit: number; resume?: Resume },
): Promise<number> {
  const from = args.resume?.from ?? BEGINNING;
  const [table, column] = [db(target.table), db(target.column)];
  const result = await db<Record<string, unknown>[]>`
    delete from ${table}
    where ctid = any(array(
      select ctid from ${table}
      where ${target.old(db)} and ${column} >= ${from}
      order by ${column}
      limit ${args.limit}
      for update skip locked
    ))
    and ${target.old(db)}
    returning ${column}`;
  advance(args.resume, result, target.column);
  return result.count;
}

/**
 * A worker that runs `once` at start and then every `intervalMs` until aborted. It never dies: the first failure of a
 * run of failures is logged, and the recovery with the number of failed runs. Every periodic job (both services'
 * retention, the points' retention, the history partitions) is one call of this; their worker files look alike
 * because each gives only what is its own: a name, an interval, its run and what that run reports.
 */
export function periodicWorker(options: {
  name: string;
  /** The `component` of the worker's log lines, and of those `once` writes to the log it is given; the name if unset. */
  component?: string;
  intervalMs: number;
  log: Logger;
  once: (signal: AbortSignal, log: Logger) => Promise<void>;
}): Worker {
  const log = options.log.child({ component: options.component ?? options.name });
  return {
    name: options.name,
    async run(signal) {
      let failures = 0;
      while (!signal.aborted) {
        try {
          await options.once(signal, log);
          if (failures > 0) log.info({ failed_runs: failures }, `${options.name} works again`);
          failures = 0;
        } catch (error) {
          if (++failures === 1) log.error({ err: error }, `${options.name} failed; retrying at the next interval`);
        }
        await sleep(options.intervalMs, signal);
      }
    },
  };
}

/** Logs what a retention pass deleted (`message` with the count of each kind), when it deleted anything. */
export function logDeleted(log: Logger, counts: Record<string, number>, message: string): void {
  if (Object.values(counts).some((n) => n > 0)) log.info(counts, message);
}
