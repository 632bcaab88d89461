// Marking notifications SENT in groups: the deliveries of one claim finish within a few milliseconds of each other,
// and an update per notification was the delivery's largest cost (one statement per event, 1.0 of Notification's 1.1
// statements per event in a backlog, docs/benchmarks.md "Pipeline cost"). A group's first mark waits up to the linger
// (`lingerMs`) for the others, so that at a steady trickle the notifications of several claims share one statement
// (src/shared/grouped.ts, ADR-37). Each is guarded as markSent is (failure-modes.md).
import type { Db } from "../../../shared/db.ts";
import { createMarkRecorder } from "../../../shared/grouped.ts";
import { markSentMany } from "./queries.ts";

/**
 * Resolves true when the notification was marked SENT, false when its lease was lost; rejects when the update failed.
 * `flush` sends the waiting marks now.
 */
export type SentRecorder = ((notificationId: string, sentAt: Date) => Promise<boolean>) & { flush(): Promise<void> };

type SentMark = { notificationId: string; sentAt: Date };

export function createSentRecorder(deps: { sql: Db; lockedBy: string; lingerMs?: number }): SentRecorder {
  const recorder = createMarkRecorder<SentMark>(
    (sent) => markSentMany(deps.sql, { lockedBy: deps.lockedBy, sent }),
    (m) => m.notificationId,
    { lingerMs: deps.lingerMs },
  );
  const record = (notificationId: string, sentAt: Date) => recorder({ notificationId, sentAt });
  return Object.assign(record, { flush: recorder.flush });
}
