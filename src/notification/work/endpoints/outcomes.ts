// Finalizing endpoint deliveries in groups (src/shared/grouped.ts), as delivery/sent.ts does for the notifications.
// After each group, the endpoints that failed are checked against NOTIFICATION_ENDPOINT_DISABLE_AFTER.
import type { Db } from "../../../shared/db.ts";
import { createGroupedRecorder } from "../../../shared/grouped.ts";
import { type DeliveryOutcome, finalizeDeliveries } from "./delivery-queries.ts";

/** Resolves true when the outcome was recorded, false when the lease was lost; rejects when the statement failed. */
export type OutcomeRecorder = (outcome: DeliveryOutcome) => Promise<boolean>;

export function createOutcomeRecorder(deps: {
  sql: Db;
  lockedBy: string;
  /** Told, after each group, of the endpoints whose attempts failed in it. */
  onFailures?: (endpointIds: string[]) => Promise<void>;
}): OutcomeRecorder {
  return createGroupedRecorder<DeliveryOutcome>(async (group) => {
    try {
      const done = await finalizeDeliveries(deps.sql, {
        lockedBy: deps.lockedBy,
        outcomes: group.map((w) => w.item),
      });
      const changed = new Set(done.map((d) => `${d.endpointId}/${d.notificationId}`));
      for (const w of group) w.resolve(changed.has(`${w.item.endpointId}/${w.item.notificationId}`));
    } catch (error) {
      for (const w of group) w.reject(error);
      return;
    }
    const failed = group.filter((w) => w.item.status !== "SENT" && w.item.endpointFault);
    const endpoints = [...new Set(failed.map((w) => w.item.endpointId))];
    if (endpoints.length > 0) await deps.onFailures?.(endpoints);
  });
}
