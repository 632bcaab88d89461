// Log lines that a flood could repeat (a refused token, a sign-in guess, a request during a database outage) are held
// to one per key per quiet spell: the metric counts every one, the log says that it happens and how often.

/**
 * `quietMs` between two lines of one key (default 10 s); `now` a monotonic clock in milliseconds. Keys are a fixed
 * set of reasons, never values from a request, so the map stays small.
 */
export function createLogThrottle<K>(options: { quietMs?: number; now?: () => number } = {}) {
  const quietMs = options.quietMs ?? 10_000;
  const now = options.now ?? (() => performance.now());
  const last = new Map<K, { at: number; skipped: number }>();
  /** Undefined: stay quiet. Else log now, with `skipped` when lines were left out since the last one. */
  return (key: K): { skipped?: number } | undefined => {
    const at = now();
    const seen = last.get(key);
    if (seen && at - seen.at < quietMs) {
      seen.skipped += 1;
      return undefined;
    }
    last.set(key, { at, skipped: 0 });
    return seen?.skipped ? { skipped: seen.skipped } : {};
  };
}
