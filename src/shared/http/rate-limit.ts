// Per-caller token bucket: `burst` requests at once, refilled at `ratePerSecond`. Callers are names the service
// configures (Entitlement's token names, '' when authentication is disabled), so the number of buckets is bounded by the
// configuration; a limiter keyed by what the traffic brings (a client's address) sets `maxKeys`.

export type RateLimitSettings = { ratePerSecond: number; burst: number };

export type RateLimiter = {
  /** Takes one request from the caller's bucket: undefined when allowed, else the seconds to wait (≥ 1). */
  take: (caller: string) => number | undefined;
};

/**
 * `now` is a monotonic clock in milliseconds (performance.now in production, a fake one in tests). Beyond `maxKeys`
 * buckets the one used the longest ago is forgotten (it starts full again when its caller returns).
 */
export function createRateLimiter(
  settings: RateLimitSettings,
  now: () => number,
  options: { maxKeys?: number } = {},
): RateLimiter {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const maxKeys = options.maxKeys ?? Number.POSITIVE_INFINITY;
  return {
    take: (caller) => {
      const t = now();
      const bucket = buckets.get(caller) ?? { tokens: settings.burst, at: t };
      const elapsed = Math.max(0, t - bucket.at) / 1000;
      bucket.tokens = Math.min(settings.burst, bucket.tokens + elapsed * settings.ratePerSecond);
      bucket.at = t;
      // Re-inserted, so the map's first key is the one used the longest ago.
      buckets.delete(caller);
      if (buckets.size >= maxKeys) buckets.delete(buckets.keys().next().value as string);
      buckets.set(caller, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return undefined;
      }
      return Math.max(1, Math.ceil((1 - bucket.tokens) / settings.ratePerSecond));
    },
  };
}
