// Finalizing pushes in groups, as the endpoints' outcomes.ts does for their deliveries: pushes that end while a
// finalize is in flight go together in the next statement, so a busy worker costs about one statement per group
// instead of one per push.
import type { Db } from "../../../shared/db.ts";
import { finalizePushes, type PushOutcome } from "./queries.ts";

type Waiting = { outcome: PushOutcome; resolve: (changed: boolean) => void; reject: (e: unknown) => void };

/** Resolves true when the outcome was recorded, false when the lease was lost; rejects when the statement failed. */
export type PushRecorder = (outcome: PushOutcome) => Promise<boolean>;

export function createPushRecorder(deps: { sql: Db; lockedBy: string }): PushRecorder {
  let waiting: Waiting[] = [];
  let flushing = false;

  async function flushGroup(group: Waiting[]): Promise<void> {
    try {
      const done = await finalizePushes(deps.sql, { lockedBy: deps.lockedBy, outcomes: group.map((w) => w.outcome) });
      const changed = new Set(done.map((d) => `${d.deviceId}/${d.notificationId}`));
      for (const w of group) w.resolve(changed.has(`${w.outcome.deviceId}/${w.outcome.notificationId}`));
    } catch (error) {
      for (const w of group) w.reject(error);
    }
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
