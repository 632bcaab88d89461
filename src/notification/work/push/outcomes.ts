// Finalizing pushes in groups (src/shared/grouped.ts), as the endpoints' outcomes.ts does for their deliveries.
import type { Db } from "../../../shared/db.ts";
import { createGroupedRecorder } from "../../../shared/grouped.ts";
import { finalizePushes, type PushOutcome } from "./queries.ts";

/** Resolves true when the outcome was recorded, false when the lease was lost; rejects when the statement failed. */
export type PushRecorder = (outcome: PushOutcome) => Promise<boolean>;

export function createPushRecorder(deps: { sql: Db; lockedBy: string }): PushRecorder {
  return createGroupedRecorder<PushOutcome>(async (group) => {
    try {
      const done = await finalizePushes(deps.sql, { lockedBy: deps.lockedBy, outcomes: group.map((w) => w.item) });
      const changed = new Set(done.map((d) => `${d.deviceId}/${d.notificationId}`));
      for (const w of group) w.resolve(changed.has(`${w.item.deviceId}/${w.item.notificationId}`));
    } catch (error) {
      for (const w of group) w.reject(error);
    }
  });
}
