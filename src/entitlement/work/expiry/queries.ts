// SQL of the scheduler's expiry kind (due-work.ts), one statement per function, handle first. Every finalize is guarded
// by `locked_by = me and status = 'PROCESSING'`, so a worker that lost its lease changes nothing.
import type { Db } from "../../../shared/db.ts";
import { eventPayload } from "../../features/entitlements/outbox-event.ts";
import { expireEntitlement } from "../../write/entitlement-expire.ts";
import { claimAssignments, dueTableReads, exhaustedColumn } from "../scheduler/kind.ts";

export type ClaimedExpiry = {
  userId: string;
  sku: string;
  expiresAt: Date;
  traceId: string | null;
  attemptCount: number;
  status: "PROCESSING" | "FAILED";
};

type ClaimedRecord = {
  user_id: string;
  stock_keeping_unit: string;
  expires_at: Date;
  trace_id: string | null;
  attempt_count: number;
  status: "PROCESSING" | "FAILED";
};

/**
 * Claims due expiries oldest first: PENDING ones and PROCESSING ones whose lease (due_at) ran out; `expires_at <= now`
 * is checked again so nothing is revoked early. A lease-expired row that used every attempt becomes FAILED instead.
 */
export async function claimDueExpiries(
  db: Db,
  args: { now: Date; leaseUntil: Date; lockedBy: string; limit: number; maxAttempts: number },
): Promise<ClaimedExpiry[]> {
  const { now } = args;
  const rows = await db<ClaimedRecord[]>`
    with due as materialized (
      select user_id, stock_keeping_unit, ${exhaustedColumn(db, args.maxAttempts)}
      from entitlement_expiries
      where status in ('PENDING', 'PROCESSING') and due_at <= ${now} and expires_at <= ${now}
      order by due_at limit ${args.limit}
      for update skip locked
    )
    update entitlement_expiries x
    set ${claimAssignments(db, args)}
    from due
    where x.user_id = due.user_id and x.stock_keeping_unit = due.stock_keeping_unit
    returning x.user_id, x.stock_keeping_unit, x.expires_at, x.trace_id, x.attempt_count, x.status`;
  return rows.map((r) => ({
    userId: r.user_id,
    sku: r.stock_keeping_unit,
    expiresAt: r.expires_at,
    traceId: r.trace_id,
    attemptCount: r.attempt_count,
    status: r.status,
  }));
}

export type ExpiryExecution = {
  userId: string;
  sku: string;
  lockedBy: string;
  now: Date;
  traceId: string;
};

/**
 * Executes a claimed expiry: one call of `entitlement_expire` (write/entitlement-expire.ts), inside the scheduler's
 * transaction. The expiry DONE (guarded by the claim; when the guard fails nothing else happens) and, only if the
 * entitlement is still ACTIVE with an expiry that has passed, its revoke (version + 1, source `expiry`, expires_at
 * cleared), the EXPIRE audit row and the EntitlementRevoked event. `finalized` 0: the lease was lost; `revoked` 0: a
 * revoke, re-grant or extension had made the expiry moot.
 */
export async function executeExpiry(db: Db, x: ExpiryExecution): Promise<{ finalized: number; revoked: number }> {
  const change = { user_id: x.userId, reason: "expiry" };
  const outcome = await expireEntitlement(db, {
    userId: x.userId,
    sku: x.sku,
    reason: change.reason,
    now: x.now,
    traceId: x.traceId,
    traceparent: null,
    payload: eventPayload("EXPIRE", change, x.traceId, x.now),
    lockedBy: x.lockedBy,
  });
  return { finalized: outcome === "lost" ? 0 : 1, revoked: outcome === "applied" ? 1 : 0 };
}

/** A failed attempt: PENDING again (due at `retryAt`) or FAILED when `retryAt` is null; true when it changed. */
export async function failExpiry(
  db: Db,
  args: { userId: string; sku: string; lockedBy: string; now: Date; retryAt: Date | null; lastError: string },
): Promise<boolean> {
  const result = await db`
    update entitlement_expiries
    set status = ${args.retryAt ? "PENDING" : "FAILED"},
        due_at = greatest(expires_at, coalesce(${args.retryAt}::timestamptz, due_at)),
        last_error = ${args.lastError}, locked_by = null, locked_at = null, updated_at = ${args.now}
    where user_id = ${args.userId} and stock_keeping_unit = ${args.sku} and locked_by = ${args.lockedBy}
      and status = 'PROCESSING'`;
  return result.count > 0;
}

/** The earliest due_at and the gauges' counts, as every kind's table answers them. */
export const expiryReads = dueTableReads("entitlement_expiries");
