// Finalizing endpoint deliveries in groups, as delivery/sent.ts does for the notifications: deliveries that end while a
// finalize is in flight go together in the next statement, so a busy worker costs about one statement per group
// instead of one per delivery. Then the endpoints that failed are checked against NOTIFICATION_ENDPOINT_DISABLE_AFTER.
import type { Db } from "../../../shared/db.ts";
import { type DeliveryOutcome, finalizeDeliveries } from "./delivery-queries.ts";

type Waiting = { outcome: DeliveryOutcome; resolve: (changed: boolean) => void; reject: (e: unknown) => void };

/** Resolves true when the outcome was recorded, false when the lease was lost; rejects when the statement failed. */
export type OutcomeRecorder = (outcome: DeliveryOutcome) => Promise<boolean>;

export function createOutcomeRecorder(deps: {
  sql: Db;
  lockedBy: string;
  /** Told, after each group, of the endpoints whose attempts failed in it. */
  onFailures?: (endpointIds: string[]) => Promise<void>;
}): OutcomeRecorder {
  let waiting: Waiting[] = [];
  let flushing = false;

  async function flushGroup(group: Waiting[]): Promise<void> {
    try {
      const done = await finalizeDeliveries(deps.sql, {
        lockedBy: deps.lockedBy,
        outcomes: group.map((w) => w.outcome),
      });
      const changed = new Set(done.map((d) => `${d.endpointId}/${d.notificationId}`));
      for (const w of group) w.resolve(changed.has(`${w.outcome.endpointId}/${w.outcome.notificationId}`));
    } catch (error) {
      for (const w of group) w.reject(error);
      return;
    }
    const failed = group.filter((w) => w.outcome.status !== "SENT" && w.outcome.endpointFault);
    const endpoints = [...new Set(failed.map((w) => w.outcome.endpointId))];
    if (endpoints.length > 0) await deps.onFailures?.(endpoints);
  }

  async function flush(): Promise<void> {
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      await flushGroup(group);
    }
    flushing = false;
  }

  return (outcome) =>
    new Promise<boolean>((resolve, reject) => {
      waiting.push({ outcome, resolve, reject });
      if (!flushing) {
        flushing = true;
        setImmediate(() => void flush());
      }
    });
}
