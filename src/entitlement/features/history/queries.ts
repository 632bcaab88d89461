// SQL for an entitlement's history: a keyset walk of entitlement_audit_history_idx (migration 003), handle first.
import type { Db } from "../../../shared/db.ts";
import type { AuditAction } from "./model.ts";

export type AuditRow = {
  audit_id: string;
  action: AuditAction;
  version: number | null;
  source: string | null;
  source_id: string | null;
  caller: string | null;
  trace_id: string | null;
  occurred_at: Date;
};

/**
 * Up to `limit` changes of one entitlement, newest first, after the change `afterAuditId` (exclusive) when given.
 * The order is the index's: version (null = oldest), then time, then id. The cursor row's key is read in a subquery,
 * so the cursor needs no timestamp precision. The audit is partitioned by month: each month is walked through its own
 * copy of the index and the months are merged in order; a cursor into a month that ENTITLEMENT_AUDIT_RETENTION has
 * dropped resolves to nothing, and the page is empty.
 */
export async function listAuditOfEntitlement(
  db: Db,
  args: { userId: string; sku: string; limit: number; afterAuditId?: string },
): Promise<AuditRow[]> {
  const after = args.afterAuditId
    ? db`and (coalesce(a.version, -1), a.occurred_at, a.audit_id) <
             (select coalesce(c.version, -1), c.occurred_at, c.audit_id
              from entitlement_audit c where c.audit_id = ${args.afterAuditId}::uuid)`
    : db``;
  return db<AuditRow[]>`
    select a.audit_id, a.action, a.version::float8 as version, a.source, a.source_id, a.caller, a.trace_id,
           a.occurred_at
    from entitlement_audit a
    where a.user_id = ${args.userId} and a.stock_keeping_unit = ${args.sku} ${after}
    order by coalesce(a.version, -1) desc, a.occurred_at desc, a.audit_id desc
    limit ${args.limit}`;
}
