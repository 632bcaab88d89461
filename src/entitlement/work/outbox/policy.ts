// What happens to an event whose publish failed. The claim already counted the attempt (attempt_count is the number
// of the attempt that just failed), so the total number of publish attempts is max attempts, and a FAILED row ends
// with attempt_count = max attempts.
import { type BackoffPolicy, backoffMs, errorText } from "../../../shared/backoff.ts";
import type { OutboxRow } from "./encode.ts";
import type { OutboxFailure } from "./queries.ts";

export type RelaySettings = {
  subject: string;
  batchSize: number;
  /** The size batches grow to while claims come back full (relay.ts); absent or smaller: no growth. */
  maxBatchSize?: number;
  /** Batches one relay keeps in flight at once (ENTITLEMENT_OUTBOX_CONCURRENCY); claims stay one at a time. */
  concurrency: number;
  maxAttempts: number;
  leaseMs: number;
  pollIntervalMs: number;
  /**
   * The longest sleep of an idle relay (two passes in a row claimed nothing): it sleeps until the next retry time or
   * lease end, at most this long. Absent, or not above the poll interval: a fixed poll.
   */
  idlePollIntervalMs?: number;
  /** How long a trickle's PUBLISHED marks wait for others' (relay.ts); absent: FINALIZE_LINGER_MS. */
  finalizeLingerMs?: number;
  errorMessageMaxLength: number;
  backoff: BackoffPolicy;
};

/**
 * A retry with backoff, or FAILED once every attempt is used. `permanent` (an event that can never be encoded) is
 * FAILED at once and recorded as having used every attempt.
 */
export function planFailure(
  settings: RelaySettings,
  row: OutboxRow,
  error: unknown,
  now: Date,
  options: { permanent?: boolean; random?: () => number } = {},
): OutboxFailure {
  const lastError = errorText(error, settings.errorMessageMaxLength);
  if (options.permanent || row.attemptCount >= settings.maxAttempts) {
    const attemptCount = Math.max(row.attemptCount, settings.maxAttempts);
    return { eventId: row.eventId, status: "FAILED", attemptCount, nextRetryAt: null, lastError };
  }
  const delay = backoffMs(settings.backoff, row.attemptCount, options.random);
  const nextRetryAt = new Date(now.getTime() + delay);
  return { eventId: row.eventId, status: "PENDING", attemptCount: row.attemptCount, nextRetryAt, lastError };
}

/**
 * A publish that failed while NATS was disconnected says nothing about the event: it goes back to PENDING, due at
 * once, and the attempt its claim counted is given back (an outage must not burn attempts).
 */
export function planRelease(settings: RelaySettings, row: OutboxRow, error: unknown): OutboxFailure {
  return {
    eventId: row.eventId,
    status: "PENDING",
    attemptCount: Math.max(0, row.attemptCount - 1),
    nextRetryAt: null,
    lastError: errorText(
      `NATS disconnected: ${errorText(error, settings.errorMessageMaxLength)}`,
      settings.errorMessageMaxLength,
    ),
  };
}
