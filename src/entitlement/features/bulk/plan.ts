// The preview of a bulk file: which valid rows will change an entitlement, which find it already in the state they
// ask for, and which are invalid (with their line and why). It only reads.
import type { Db } from "../../../shared/db.ts";
import { TARGET_STATUS } from "../entitlements/model.ts";
import type { BulkFile } from "./csv.ts";
import { readPairStatuses } from "./queries.ts";
import { type BulkChange, checkRows, type InvalidRow } from "./rows.ts";

export type BulkPlan = {
  file: BulkFile;
  /** Every valid row, in the file's order. */
  changes: BulkChange[];
  invalid: InvalidRow[];
  /** The lines of valid rows whose entitlement is already in the state they ask for. */
  unchangedLines: Set<number>;
};

/** At most this many pairs per lookup, so that no statement carries arrays of the whole file. */
const LOOKUP_CHUNK = 2_000;

export async function planBulk(db: Db, file: BulkFile, now: Date): Promise<BulkPlan> {
  const { changes, invalid } = checkRows(file, now);
  const status = new Map<string, string>();
  for (let i = 0; i < changes.length; i += LOOKUP_CHUNK) {
    const pairs = changes
      .slice(i, i + LOOKUP_CHUNK)
      .map((c) => ({ userId: c.body.user_id, sku: c.body.stock_keeping_unit }));
    for (const row of await readPairStatuses(db, pairs)) {
      status.set(JSON.stringify([row.user_id, row.stock_keeping_unit]), row.status);
    }
  }
  const unchangedLines = new Set(
    changes
      .filter(
        (c) => status.get(JSON.stringify([c.body.user_id, c.body.stock_keeping_unit])) === TARGET_STATUS[c.action],
      )
      .map((c) => c.line),
  );
  return { file, changes, invalid, unchangedLines };
}

export type PlanCounts = { rows: number; willChange: number; unchanged: number; invalid: number };

export function planCounts(plan: BulkPlan): PlanCounts {
  const unchanged = plan.unchangedLines.size;
  return {
    rows: plan.file.rows.length,
    willChange: plan.changes.length - unchanged,
    unchanged,
    invalid: plan.invalid.length,
  };
}
