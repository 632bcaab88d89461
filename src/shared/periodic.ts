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
