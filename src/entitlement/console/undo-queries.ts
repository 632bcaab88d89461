// SQL of the console's undo: a change of one entitlement as its audit row says, whether an undo of it exists, and the
// entitlement's version now. An undo is recognised by its source id `undo:<audit_id>` (undo.ts); every read goes
// through entitlement_audit_history_idx (user, SKU) and the entitlements' primary key.
import type { Db } from "../../shared/db.ts";
import type { AuditAction } from "../features/history/model.ts";

export const undoSourceId = (auditId: string) => `undo:${auditId}`;

export type UndoTarget = {
  audit_id: string;
  occurred_at: Date;
  action: AuditAction;
  version: number | null;
  caller: string | null;
  source_id: string | null;
  /** An undo of this change exists. */
  undone: boolean;
  /** The entitlement's version now (null: the row is gone). */
  current_version: number | null;
  /**
   * For a revoke or an extension: the expiry the entitlement had before it (a revoke clears it, an extension replaces
   * it). An extension keeps it in its own audit detail (`expires_before`). For a revoke, and an extension recorded
   * before extensions kept it, it is the one set by the grant or extension just before: a single grant or an
   * extension keeps it in its audit detail; a bundle grant's is the expiry row it wrote in the same statement (same
   * instant), found only while no extension has rewritten that row since (null then).
   */
  expires_before: Date | null;
};

export async function findUndoTarget(
  db: Db,
  args: { userId: string; sku: string; auditId: string },
): Promise<UndoTarget | undefined> {
  const [row] = await db<UndoTarget[]>`
    select a.audit_id, a.occurred_at, a.action, a.version::float8 as version, a.caller, a.source_id,
           exists (select from entitlement_audit u
                   where u.user_id = a.user_id and u.stock_keeping_unit = a.stock_keeping_unit
                     and u.source_id = ${undoSourceId(args.auditId)}) as undone,
           (select e.version::float8 from entitlements e
            where e.user_id = a.user_id and e.stock_keeping_unit = a.stock_keeping_unit) as current_version,
           coalesce((a.detail ->> 'expires_before')::timestamptz,
                    (select coalesce((p.detail ->> 'expires_at')::timestamptz,
                                     (select x.expires_at from entitlement_expiries x
                                      where x.user_id = p.user_id and x.stock_keeping_unit = p.stock_keeping_unit
                                        and x.updated_at = p.occurred_at))
                     from entitlement_audit p
                     where p.user_id = a.user_id and p.stock_keeping_unit = a.stock_keeping_unit
                       and p.action in ('GRANT', 'EXTEND') and coalesce(p.version, -1) < coalesce(a.version, -1)
                     order by coalesce(p.version, -1) desc, p.occurred_at desc
                     limit 1)) as expires_before
    from entitlement_audit a
    where a.user_id = ${args.userId} and a.stock_keeping_unit = ${args.sku} and a.audit_id = ${args.auditId}::uuid`;
  return row;
}

/**
 * The one change of the entitlement that can be undone now, if any: its latest (its version is the entitlement's),
 * made from the console since `since`, a grant, a revoke (of an item that had been granted) or an extension, not
 * itself an undo, not undone yet.
 */
export async function findUndoable(
  db: Db,
  args: { userId: string; sku: string; since: Date },
): Promise<{ audit_id: string; version: number } | undefined> {
  const [row] = await db<{ audit_id: string; version: number }[]>`
    select a.audit_id, a.version::float8 as version
    from entitlement_audit a
    join entitlements e on e.user_id = a.user_id and e.stock_keeping_unit = a.stock_keeping_unit
      and e.version = a.version
    where a.user_id = ${args.userId} and a.stock_keeping_unit = ${args.sku}
      and a.caller like 'console:%' and a.action in ('GRANT', 'REVOKE', 'EXTEND') and a.occurred_at >= ${args.since}
      and coalesce(a.source_id, '') not like 'undo:%' and not (a.action = 'REVOKE' and a.version = 0)
      and not exists (select from entitlement_audit u
                      where u.user_id = a.user_id and u.stock_keeping_unit = a.stock_keeping_unit
                        and u.source_id = 'undo:' || a.audit_id::text)
    order by a.occurred_at desc
    limit 1`;
  return row;
}
