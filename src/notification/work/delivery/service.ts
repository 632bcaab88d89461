// One delivery round: claim a batch, send each notification concurrently, finalize each under its lease.
import { secondsBetween } from "../../../shared/metrics.ts";
import { contextOfTraceparent, inSpan } from "../../../shared/trace-context.ts";
import type { Delivery } from "../channels/sender.ts";
import type { DeliveryDeps } from "./deps.ts";
import { handleFailure, moveToDlq } from "./failure.ts";
import { type ClaimedNotification, claimNotifications, markExpired, markSent } from "./queries.ts";

function toDelivery(n: ClaimedNotification): Delivery {
  const { notificationId, eventId, userId, type, occurredAt, payload } = n;
  return { notificationId, eventId, userId, type, occurredAt, payload };
}

/**
 * Every earlier claim of this row ended without an outcome (its worker died or stalled past the lease): the claim
 * already counted them all, so the row fails instead of looping forever (docs/decisions.md).
 */
async function failExhausted(deps: DeliveryDeps, n: ClaimedNotification): Promise<void> {
  const error = "delivery attempts exhausted: earlier claims expired without an outcome";
  const guard = { notificationId: n.notificationId, lockedBy: deps.workerId };
  try {
    if (!(await moveToDlq(deps, { ...guard, attemptCount: deps.maxAttempts, error }))) return;
  } catch (dbError) {
    deps.log.error({ err: dbError, notification_id: n.notificationId }, "could not move an exhausted notification");
    return;
  }
  deps.metrics.delivery.inc({ result: "failed" });
  deps.metrics.dlq.inc();
  deps.log.error({ notification_id: n.notificationId }, error);
}

/**
 * Sends one claimed notification and finalizes it under its lease; never throws. Each attempt is a span of the event's
 * trace (a child of its consume span): its log lines and its webhook carry it.
 */
export function deliverOne(deps: DeliveryDeps, n: ClaimedNotification): Promise<void> {
  const attributes = { "notification.id": n.notificationId, "notification.attempt": n.attemptCount };
  return inSpan("notification deliver", { parent: contextOfTraceparent(n.traceparent), attributes }, () =>
    attemptDelivery(deps, n),
  );
}

/** Past its expires_at: ended without a send, counted as expired (not failed). */
async function expire(deps: DeliveryDeps, n: ClaimedNotification, now: Date): Promise<void> {
  try {
    if (
      (await markExpired(deps.sql, { notificationId: n.notificationId, lockedBy: deps.workerId, expiredAt: now })) === 1
    ) {
      deps.metrics.delivery.inc({ result: "expired" });
    }
  } catch (error) {
    deps.log.error({ err: error, notification_id: n.notificationId }, "could not mark an expired notification");
  }
}

async function attemptDelivery(deps: DeliveryDeps, n: ClaimedNotification): Promise<void> {
  const now = deps.now();
  if (n.expiresAt && n.expiresAt <= now) return expire(deps, n, now);
  if (n.attemptCount > deps.maxAttempts) return failExhausted(deps, n);
  try {
    await deps.send(toDelivery(n));
  } catch (error) {
    return handleFailure(deps, n, error);
  }
  const sentAt = deps.now();
  // The id goes in each line, not in a child logger: pino's child() compiles the redaction paths again each time,
  // ~120 µs of CPU per delivered notification for lines that are only written when something went wrong.
  const log = { notification_id: n.notificationId };
  try {
    const marked = deps.recordSent
      ? await deps.recordSent(n.notificationId, sentAt)
      : (await markSent(deps.sql, { notificationId: n.notificationId, lockedBy: deps.workerId, sentAt })) === 1;
    if (!marked) {
      deps.log.warn(log, "notification sent, but its lease was lost before it was marked SENT");
      return;
    }
    deps.metrics.delivery.inc({ result: "sent" });
    const delay = secondsBetween(n.occurredAt, sentAt);
    if (delay !== undefined) deps.metrics.e2eDelay.observe(delay);
  } catch (error) {
    // Delivered, so this is no send failure: the lease expires and it is sent once more.
    deps.log.error(
      { ...log, err: error },
      "notification sent, but marking it SENT failed; it is sent again after the lease",
    );
  }
}

/** Claims up to `limit` due notifications for this worker (leased for `leaseMs`). */
export async function claimDue(deps: DeliveryDeps, limit: number): Promise<ClaimedNotification[]> {
  const now = deps.now();
  return claimNotifications(deps.sql, {
    limit,
    now,
    leaseUntil: new Date(now.getTime() + deps.leaseMs),
    lockedBy: deps.workerId,
  });
}
