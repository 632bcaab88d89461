// Small building blocks of the periodic jobs (both services' retention).
import type { Logger } from "./logger.ts";
import { sleep, type Worker } from "./runtime.ts";

/**
 * Runs `step(limit)` until it handles fewer than `limit` rows (or `signal` aborts) and returns the total: bounded
 * statements, so none holds many row locks for long.
 */
export async function untilShortBatch(
  step: (limit: number) => Promise<number>,
  limit: number,
  signal?: AbortSignal,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await step(limit);
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

/**
 * A worker that runs `once` at start and then every `intervalMs` until aborted. It never dies: the first failure of a
 * run of failures is logged, and the recovery with the number of failed runs.
 */
export function periodicWorker(options: {
  name: string;
  intervalMs: number;
  log: Logger;
  once: (signal: AbortSignal) => Promise<void>;
}): Worker {
  const { log } = options;
  return {
    name: options.name,
    async run(signal) {
      let failures = 0;
      while (!signal.aborted) {
        try {
          await options.once(signal);
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
