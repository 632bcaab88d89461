// The history of one entitlement from the audit log, newest first, paged.
import type { Db } from "../../../shared/db.ts";
import { type HistoryResponse, STATUS_AFTER } from "./model.ts";
import { pageOf } from "./paging.ts";
import { listAuditOfEntitlement } from "./queries.ts";

export async function readHistory(
  db: Db,
  args: { userId: string; sku: string; limit: number; afterAuditId?: string },
): Promise<HistoryResponse> {
  const rows = await listAuditOfEntitlement(db, { ...args, limit: args.limit + 1 });
  const page = pageOf(rows, args.limit, (row) => row.audit_id);
  return {
    user_id: args.userId,
    stock_keeping_unit: args.sku,
    changes: page.items.map((row) => ({
      action: row.action,
      status: STATUS_AFTER[row.action],
      version: row.version,
      reason: row.source,
      source_id: row.source_id,
      caller: row.caller,
      trace_id: row.trace_id,
      occurred_at: row.occurred_at.toISOString(),
    })),
    next_cursor: page.nextCursor,
  };
}
