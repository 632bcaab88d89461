// Marking notifications SENT in groups: the deliveries of one claim finish within a few milliseconds of each other,
// and an update per notification was the delivery's largest cost (one statement per event, 1.0 of Notification's 1.1
// statements per event in a backlog, docs/benchmarks.md "Pipeline cost"). The first SENT goes out at once; those that
// finish while it is in flight go together in the next statement. Each is guarded as markSent is (failure-modes.md).
import type { Db } from "../../../shared/db.ts";
import { markSentMany } from "./queries.ts";

type Waiting = {
  notificationId: string;
  sentAt: Date;
  resolve: (changed: boolean) => void;
  reject: (e: unknown) => void;
};

/** Resolves true when the notification was marked SENT, false when its lease was lost; rejects when the update failed. */
export type SentRecorder = (notificationId: string, sentAt: Date) => Promise<boolean>;

export function createSentRecorder(deps: { sql: Db; lockedBy: string }): SentRecorder {
  let waiting: Waiting[] = [];
  let flushing = false;

  async function flush(): Promise<void> {
    flushing = true;
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      try {
        const changed = new Set(await markSentMany(deps.sql, { lockedBy: deps.lockedBy, sent: group }));
        for (const w of group) w.resolve(changed.has(w.notificationId));
      } catch (error) {
        for (const w of group) w.reject(error);
      }
    }
    flushing = false;
  }

  return (notificationId, sentAt) =>
    new Promise<boolean>((resolve, reject) => {
      waiting.push({ notificationId, sentAt, resolve, reject });
      // Deliveries that end in the same turn of the event loop share the first statement too.
      if (!flushing) {
        flushing = true;
        setImmediate(() => void flush());
      }
    });
}
