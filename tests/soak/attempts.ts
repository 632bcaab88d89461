// How many of the soak's requests are on the wire at once. Bun's fetch keeps at most BUN_CONFIG_MAX_HTTP_REQUESTS
// connections (the player streams hold most of them) and queues the rest itself, each with its timeout already
// running. After a failover's backlog on a slow machine, requests timed out in that queue without ever being sent,
// their retries filled it again, and the soak measured its own queue while the services stood idle (their database
// connections idle, half the machine free). Here a request waits for a slot before its timeout starts, and the time
// it waited counts in its latency, so a backlog still shows in the minutes' p99.

export type Attempt = <T extends { ms: number }>(call: () => Promise<T>) => Promise<T>;

/** At most `max` calls at once; the others wait in order, and each result's `ms` includes the wait. */
export function createAttempts(max: number): Attempt {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T extends { ms: number }>(call: () => Promise<T>): Promise<T> => {
    const queued = performance.now();
    if (active < max) active += 1;
    else await new Promise<void>((resolve) => waiting.push(resolve)); // the slot is handed over by the one ending
    const waited = performance.now() - queued;
    try {
      const result = await call();
      return { ...result, ms: result.ms + waited };
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active -= 1;
    }
  };
}
