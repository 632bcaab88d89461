// What happens after a failed send: another try later with backoff, or, at the last attempt or on a permanent
// error, FAILED plus a notification_dlq row in one transaction that is rolled back when the lease was lost.
import { backoffMs, errorText } from "../../../shared/backoff.ts";
import { PermanentDeliveryError } from "../channels/sender.ts";
import type { DeliveryDeps } from "./deps.ts";
import { type ClaimedNotification, insertNotificationDlq, markFailed, markRetry } from "./queries.ts";

class LeaseLostError extends Error {
  constructor() {
    super("lease lost before the notification was moved to the DLQ");
    this.name = "LeaseLostError";
  }
}

/** Returns false (and leaves nothing behind) when another worker holds the notification now. */
export async function moveToDlq(
  deps: Pick<DeliveryDeps, "sql" | "now">,
  input: { notificationId: string; lockedBy: string; attemptCount: number; error: string },
): Promise<boolean> {
  try {
    await deps.sql.begin(async (tx) => {
      await insertNotificationDlq(tx, { notificationId: input.notificationId, error: input.error, now: deps.now() });
      const updated = await markFailed(tx, input);
      if (updated === 0) throw new LeaseLostError();
    });
    return true;
  } catch (error) {
    if (error instanceof LeaseLostError) return false;
    throw error;
  }
}

/** Finalizes a failed attempt. A database error here leaves the row PROCESSING: the lease expiry retries it. */
export async function handleFailure(deps: DeliveryDeps, n: ClaimedNotification, failure: unknown): Promise<void> {
  const error = errorText(failure, deps.errorMessageMaxLength);
  const permanent = failure instanceof PermanentDeliveryError;
  const log = deps.log.child({ notification_id: n.notificationId, attempt: n.attemptCount });
  const guard = { notificationId: n.notificationId, lockedBy: deps.workerId };
  try {
    if (permanent || n.attemptCount >= deps.maxAttempts) {
      const attemptCount = Math.min(n.attemptCount, deps.maxAttempts);
      if (await moveToDlq(deps, { ...guard, attemptCount, error })) {
        deps.metrics.delivery.inc({ result: "failed" });
        deps.metrics.dlq.inc();
        log.error({ error, permanent }, "notification moved to the DLQ");
      } else {
        log.warn("lease lost before the DLQ move; the new owner decides");
      }
      return;
    }
    const nextRetryAt = new Date(deps.now().getTime() + backoffMs(deps.backoff, n.attemptCount, deps.random));
    if ((await markRetry(deps.sql, { ...guard, nextRetryAt, error })) === 1) {
      deps.metrics.delivery.inc({ result: "retry_scheduled" });
      log.warn({ error, next_retry_at: nextRetryAt }, "delivery failed, retry scheduled");
    } else {
      log.warn("lease lost before the retry was recorded; the new owner decides");
    }
  } catch (dbError) {
    log.error({ err: dbError, error }, "could not record the failed delivery; it is retried when the lease expires");
  }
}
