// What one push came to, the same words for every push service: the worker decides from it alone whether to retry,
// delete the device or give up, and the metrics count it by platform and outcome.
export type PushResult =
  | { outcome: "sent"; statusCode: number }
  /** The push service says the device is gone (Web Push 404/410, FCM UNREGISTERED or 404): the device is deleted. */
  | { outcome: "gone"; statusCode: number; error: string }
  /** 429, 5xx, a network error or a timeout: tried again after a backoff, or after `retryAfterMs` when it said so. */
  | { outcome: "retry"; statusCode: number | null; error: string; retryAfterMs: number | null }
  /** Any other refusal: this push only fails; the device stays. */
  | { outcome: "failed"; statusCode: number | null; error: string };

/** Retry-After waited at most: a push service that asks for a day gets the backoff's cap instead. */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * Milliseconds a `Retry-After` value asks for: delay-seconds or an HTTP date (RFC 9110 section 10.2.3); null when
 * absent or unreadable. Capped at MAX_RETRY_AFTER_MS.
 */
export function retryAfterMs(value: string | null | undefined, now: Date): number | null {
  if (value === null || value === undefined || value.trim() === "") return null;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now.getTime();
  if (Number.isNaN(ms)) return null;
  return Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS);
}

/** The result of a push service's answer that is not a success, by status alone (FCM refines it with its body). */
export function resultOfStatus(
  statusCode: number,
  error: string,
  retryAfter: string | null | undefined,
  now: Date,
): PushResult {
  if (statusCode >= 200 && statusCode < 300) return { outcome: "sent", statusCode };
  if (statusCode === 404 || statusCode === 410) return { outcome: "gone", statusCode, error };
  if (statusCode === 429 || statusCode >= 500) {
    return { outcome: "retry", statusCode, error, retryAfterMs: retryAfterMs(retryAfter, now) };
  }
  return { outcome: "failed", statusCode, error };
}

/** A request that got no answer (network error, timeout): tried again. */
export const unanswered = (error: string): PushResult => ({
  outcome: "retry",
  statusCode: null,
  error,
  retryAfterMs: null,
});
