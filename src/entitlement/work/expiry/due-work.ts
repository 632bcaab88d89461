// Entitlement expiry as a kind of the scheduler's due work (scheduler/kind.ts): claimed when expires_at has come, and
// executed as a revoke with source `expiry` (audit EXPIRE, event EntitlementRevoked): one call of `entitlement_expire`.
import type { Db } from "../../../shared/db.ts";
import type { ClaimArgs, ClaimedItem, DueWorkKind, ExecuteOutcome, Failure } from "../scheduler/kind.ts";
import { type ClaimedExpiry, claimDueExpiries, executeExpiry, expiryReads, failExpiry } from "./queries.ts";

type DueExpiry = ClaimedItem & { expiry: ClaimedExpiry };

export function entitlementExpiryDue(): DueWorkKind<DueExpiry> {
  return {
    name: "expiry",
    ...expiryReads,
    async claim(db: Db, args: ClaimArgs): Promise<DueExpiry[]> {
      const rows = await claimDueExpiries(db, args);
      return rows.map((r) => ({
        id: `${r.userId}:${r.sku}`,
        attemptCount: r.attemptCount,
        scheduledAt: r.expiresAt,
        exhausted: r.status === "FAILED",
        // The entitlement's row is what the execution locks besides the expiry's own.
        lockKey: `${r.userId}:${r.sku}`,
        expiry: r,
      }));
    },
    async execute(tx: Db, item: DueExpiry, ctx): Promise<ExecuteOutcome> {
      const { userId, sku, traceId } = item.expiry;
      const result = await executeExpiry(tx, {
        userId,
        sku,
        lockedBy: ctx.lockedBy,
        now: ctx.now,
        // The trace of the grant or extension that set the expiry, so the revoke is found beside its cause.
        traceId: traceId ?? crypto.randomUUID(),
      });
      return result.finalized === 1 ? "done" : "lost";
    },
    fail: (db: Db, item: DueExpiry, f: Failure) =>
      failExpiry(db, { ...f, userId: item.expiry.userId, sku: item.expiry.sku }),
  };
}
