// SQL of the audit search: the audit log newest first by (occurred_at, audit_id), with the filters given, one page
// after a key. Which index serves which filter is said in db/entitlement/017_audit_search.sql.
import type { Db } from "../../../shared/db.ts";
import type { AuditAction } from "../history/model.ts";

export type AuditFilter = {
  userId?: string;
  sku?: string;
  caller?: string;
  /** Every caller that starts with it (`console:`). */
  callerPrefix?: string;
  action?: AuditAction;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
};

/** The last row of the previous page: occurred_at to the microsecond (as text, a Date holds milliseconds) and id. */
export type AuditKey = { occurredAt: string; auditId: string };

export type AuditEntry = {
  audit_id: string;
  occurred_at: Date;
  /** occurred_at to the microsecond, UTC: the page key. */
  occurred_key: string;
  user_id: string;
  stock_keeping_unit: string;
  action: AuditAction;
  version: number | null;
  source: string | null;
  source_id: string | null;
  caller: string | null;
  request_id: string | null;
  trace_id: string | null;
  detail: Record<string, unknown> | null;
};

/**
 * Above every text that starts with `prefix`, in the byte order of the caller index (text_pattern_ops, migration 019):
 * no UTF-8 character encodes above U+10FFFF, so the range [prefix, prefix + U+10FFFF) holds exactly the callers that
 * start with the prefix (but for those that continue with U+10FFFF itself, a noncharacter).
 */
const prefixBound = (prefix: string): string => `${prefix}\u{10FFFF}`;

export async function searchAudit(
  db: Db,
  args: { filter: AuditFilter; limit: number; after?: AuditKey },
): Promise<AuditEntry[]> {
  const f = args.filter;
  const when = <T>(value: T | undefined, fragment: (v: T) => ReturnType<typeof db>) =>
    value === undefined ? db`` : fragment(value);
  return db<AuditEntry[]>`
    select audit_id, occurred_at,
           to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as occurred_key,
           user_id, stock_keeping_unit, action, version::float8 as version, source, source_id, caller, request_id,
           trace_id, detail
    from entitlement_audit
    where true
      ${when(f.userId, (v) => db`and user_id = ${v}`)}
      ${when(f.sku, (v) => db`and stock_keeping_unit = ${v}`)}
      ${when(f.caller, (v) => db`and caller = ${v}`)}
      ${when(f.callerPrefix, (v) => db`and caller ~>=~ ${v} and caller ~<~ ${prefixBound(v)}`)}
      ${when(f.action, (v) => db`and action = ${v}`)}
      ${when(f.from, (v) => db`and occurred_at >= ${v}::timestamptz`)}
      ${when(f.to, (v) => db`and occurred_at < ${v}::timestamptz`)}
      ${when(args.after, (k) => db`and (occurred_at, audit_id) < (${k.occurredAt}::timestamptz, ${k.auditId}::uuid)`)}
    order by occurred_at desc, audit_id desc
    limit ${args.limit}`;
}
