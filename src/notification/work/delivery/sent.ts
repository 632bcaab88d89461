// Marking notifications SENT in groups: the deliveries of one claim finish within a few milliseconds of each other,
// and an update per notification was the delivery's largest cost (one statement per event, 1.0 of Notification's 1.1
// statements per event in a backlog, docs/benchmarks.md "Pipeline cost"). The marks wait up to the linger
// (`lingerMs`) for the next claim, which takes them into its own statement (service.ts claimDue, queries.ts
// markSentAndClaim); those that no claim takes in time go out together in a statement of their own
// (../claim-loop.ts createGroupedRecorder). Each is guarded as markSent is (failure-modes.md).
import type { Db } from "../../../shared/db.ts";
import { createGroupedRecorder, type Waiting } from "../claim-loop.ts";
import { markSentMany, type SentMark } from "./queries.ts";

/**
 * Resolves true when the notification was marked SENT, false when its lease was lost; rejects when the update failed.
 * `take` hands the waiting marks to the next claim, `flush` sends them now.
 */
export type SentRecorder = ((notificationId: string, sentAt: Date) => Promise<boolean>) & {
  take(): Waiting<SentMark>[];
  flush(): void;
};

/** Settles each waiting mark: true when its id is among those the statement changed. */
export function settleSent(group: Waiting<SentMark>[], changed: string[]): void {
  const ids = new Set(changed);
  for (const w of group) w.resolve(ids.has(w.item.notificationId));
}

export function createSentRecorder(deps: { sql: Db; lockedBy: string; lingerMs?: number }): SentRecorder {
  const recorder = createGroupedRecorder<SentMark>(
    async (group) => {
      try {
        settleSent(group, await markSentMany(deps.sql, { lockedBy: deps.lockedBy, sent: group.map((w) => w.item) }));
      } catch (error) {
        for (const w of group) w.reject(error);
      }
    },
    { lingerMs: deps.lingerMs },
  );
  const record = (notificationId: string, sentAt: Date) => recorder({ notificationId, sentAt });
  return Object.assign(record, { take: recorder.take, flush: recorder.flush });
}
