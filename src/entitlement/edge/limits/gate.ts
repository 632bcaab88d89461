// Bounds the database work of the API: at most `slots` requests hold a connection at once (sized to the pool), a
// request waits at most `queueTimeoutMs` for a slot and the whole request at most `requestTimeoutMs`. A saturated
// service answers 503 NOT_READY quickly instead of queueing without end. Requests reach the gate only after their
// body has been read and validated, so a slow or oversized upload never holds a slot.
import { ApiError } from "../../../shared/http/errors.ts";

export type GateSettings = {
  slots: number;
  /** Requests that may wait for a slot; beyond this they are refused at once. */
  maxQueue: number;
  queueTimeoutMs: number;
  requestTimeoutMs: number;
};

export type Gate = {
  run: <T>(work: () => Promise<T>) => Promise<T>;
  /** Requests holding a slot and waiting for one (for tests and metrics). */
  load: () => { active: number; waiting: number };
};

const busy = () => new ApiError(503, "NOT_READY", "too many requests in progress, retry later");
const timedOut = () => new ApiError(503, "NOT_READY", "request timed out, retry later");

export function createGate(settings: GateSettings): Gate {
  let active = 0;
  const waiters: Array<() => void> = [];

  const acquire = (): Promise<void> => {
    if (active < settings.slots) {
      active += 1;
      return Promise.resolve();
    }
    if (waiters.length >= settings.maxQueue) return Promise.reject(busy());
    return new Promise<void>((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(wake), 1);
        reject(busy());
      }, settings.queueTimeoutMs);
      waiters.push(wake);
    });
  };
  // A released slot passes straight to the next waiter, so `active` only drops when nobody waits.
  const release = () => {
    const next = waiters.shift();
    if (next) next();
    else active -= 1;
  };

  return {
    load: () => ({ active, waiting: waiters.length }),
    run: async (work) => {
      const started = performance.now();
      await acquire();
      // The slot is held until the work really ends, even when the caller has been answered 503 already: the
      // connection is busy until then (statement_timeout bounds each of its statements).
      const running = work().finally(release);
      running.catch(() => {});
      const left = Math.max(1, settings.requestTimeoutMs - (performance.now() - started));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timedOut()), left);
      });
      return Promise.race([running, deadline]).finally(() => clearTimeout(timer));
    },
  };
}
