// Small process-level helpers: the clock, the worker shape and id, sleeping that honours shutdown, signal handling.
import { hostname } from "node:os";
import type { Sql } from "./db.ts";
import type { Logger } from "./logger.ts";

export type Clock = () => Date;

/** What every piece of a service is built with: its database pool, its logger and its clock. */
export type Handles = { sql: Sql; log: Logger; now: Clock };

/** A background loop. `run` returns once `signal` aborts and its current batch is finished; it never throws. */
export type Worker = { name: string; run: (signal: AbortSignal) => Promise<void> };
export const systemClock: Clock = () => new Date();

/** The id written to `locked_by`: $HOSTNAME (or the OS host name) plus the process id, so two workers on one host differ. */
export function workerId(configured: string | undefined, pid: number = process.pid): string {
  const host = configured?.trim() || hostname() || "unknown-host";
  return `${host}:${pid}`;
}

/** Resolves after `ms`, or at once when `signal` aborts. Never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Calls `fn` on each item, giving the event loop back after every `perTurn` of them (a macrotask turn, so timers and
 * I/O run between). For passes over tens of thousands of items that would otherwise hold the loop for a tenth of a
 * second, delaying every message and reply that arrives meanwhile.
 */
export async function forEachInTurns<T>(items: Iterable<T>, perTurn: number, fn: (item: T) => void): Promise<void> {
  let inTurn = 0;
  for (const item of items) {
    fn(item);
    if (++inTurn < perTurn) continue;
    inTurn = 0;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/**
 * A wake-up latch for worker loops: `wait(ms)` resolves after `ms`, on `wake()`, or on abort, whichever comes first.
 * A wake that arrives while the loop is busy is remembered, so no notification is lost between two waits.
 */
export class Waker {
  private pending = false;
  private resolve: (() => void) | undefined;

  wake(): void {
    if (this.resolve) {
      const r = this.resolve;
      this.resolve = undefined;
      r();
    } else {
      this.pending = true;
    }
  }

  async wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return;
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    await Promise.race([sleep(ms, controller.signal), new Promise<void>((r) => (this.resolve = r))]);
    this.resolve = undefined;
    this.pending = false;
    controller.abort();
    signal.removeEventListener("abort", onAbort);
  }
}

/** Runs `stop` once on the first SIGTERM/SIGINT; a second signal exits at once. */
export function onShutdownSignal(log: Logger, stop: (signal: string) => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, "second signal, exiting now");
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, "shutting down");
    stop(signal).then(
      () => process.exit(0),
      (error) => {
        log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", handler);
  process.on("SIGINT", handler);
}
