// The lease heartbeat: while a batch is still being published past half its lease, the relay pushes the lease
// of the rows it still holds, so a slow NATS does not let a second relay take over (and republish) a live batch.
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { OutboxRow } from "./encode.ts";
import { extendOutboxLease } from "./queries.ts";

type HeartbeatDeps = { sql: Sql; log: Logger; now: Clock; lockedBy: string; settings: { leaseMs: number } };

export async function withLeaseHeartbeat<T>(
  deps: HeartbeatDeps,
  rows: OutboxRow[],
  work: () => Promise<T>,
): Promise<T> {
  const eventIds = rows.map((r) => r.eventId);
  const beat = async () => {
    const leaseUntil = new Date(deps.now().getTime() + deps.settings.leaseMs);
    try {
      const extended = await extendOutboxLease(deps.sql, { eventIds, lockedBy: deps.lockedBy, leaseUntil });
      deps.log.debug({ extended, lease_until: leaseUntil }, "outbox lease extended");
    } catch (error) {
      // The next beat tries again; if every beat fails the lease expires and another relay takes over, which is safe.
      deps.log.warn({ err: error }, "outbox lease heartbeat failed");
    }
  };
  const timer = setInterval(beat, Math.max(1, Math.floor(deps.settings.leaseMs / 2)));
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
