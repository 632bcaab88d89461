// Marking notifications SENT in groups: the deliveries of one claim finish within a few milliseconds of each other,
// and an update per notification was the delivery's largest cost (one statement per event, 1.0 of Notification's 1.1
// statements per event in a backlog, docs/benchmarks.md "Pipeline cost"). The first SENT goes out at once; those that
// finish while it is in flight go together in the next statement (../claim-loop.ts createGroupedRecorder). Each is
// guarded as markSent is (failure-modes.md).
import type { Db } from "../../../shared/db.ts";
import { createGroupedRecorder } from "../claim-loop.ts";
import { markSentMany } from "./queries.ts";

/** Resolves true when the notification was marked SENT, false when its lease was lost; rejects when the update failed. */
export type SentRecorder = (notificationId: string, sentAt: Date) => Promise<boolean>;

export function createSentRecorder(deps: { sql: Db; lockedBy: string }): SentRecorder {
  const record = createGroupedRecorder<{ notificationId: string; sentAt: Date }>(async (group) => {
    try {
      const sent = group.map((w) => w.item);
      const changed = new Set(await markSentMany(deps.sql, { lockedBy: deps.lockedBy, sent }));
      for (const w of group) w.resolve(changed.has(w.item.notificationId));
    } catch (error) {
      for (const w of group) w.reject(error);
    }
  });
  return (notificationId, sentAt) => record({ notificationId, sentAt });
}
