// Scheduling an expiry, as a fragment the write statements of a grant, a bundle and an extension embed in their CTE,
// so the expiry commits with the change that sets it at no extra round trip. (Re)setting a row makes it PENDING and
// due at the expiry; a row in flight for an older expiry loses its claim (locked_by is cleared), so its execution
// changes nothing (scheduler finalizes are guarded by locked_by).
import type { Db } from "../../shared/db.ts";

export type ExpirySchedule = { userId: string; skus: string[]; expiresAt: Date; traceId: string; now: Date };

/** `insert ... on conflict do update` of the expiry rows of one user's items (one or a bundle's). */
export function expiryUpsert(db: Db, s: ExpirySchedule) {
  return db`
    insert into entitlement_expiries as x
      (user_id, stock_keeping_unit, expires_at, status, due_at, attempt_count, trace_id, created_at, updated_at)
    select ${s.userId}::text, sku, ${s.expiresAt}::timestamptz, 'PENDING', ${s.expiresAt}::timestamptz, 0,
           ${s.traceId}::text, ${s.now}::timestamptz, ${s.now}::timestamptz
    from unnest(${s.skus}::text[]) as item(sku)
    order by sku
    on conflict (user_id, stock_keeping_unit) do update set
      expires_at = excluded.expires_at,
      status = 'PENDING',
      due_at = excluded.due_at,
      attempt_count = 0,
      locked_by = null,
      locked_at = null,
      last_error = null,
      executed_at = null,
      trace_id = excluded.trace_id,
      updated_at = excluded.updated_at`;
}

/**
 * Locks the expiry row of one entitlement, if any. An extension takes it before the entitlement's row: the scheduler
 * locks the expiry row first and then the entitlement, and the same order on both sides means no deadlock.
 */
export async function lockExpiry(db: Db, key: { userId: string; sku: string }): Promise<void> {
  await db`select 1 from entitlement_expiries
           where user_id = ${key.userId} and stock_keeping_unit = ${key.sku} for update`;
}
