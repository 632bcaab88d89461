// What each row of an applied bulk file came to, read from the command path's reply: changed (by this run), already
// applied (by an earlier run of the same file: the key's stored reply), unchanged (the entitlement was already in that
// state), invalid (refused before or by the command) or failed (the command could not run; running the file again
// retries it).
import type { BundleReply } from "../bundles/service.ts";
import type { GrantReply } from "../entitlements/service.ts";
import type { BulkChange, InvalidRow } from "./rows.ts";

export type BulkOutcome = "changed" | "already_applied" | "unchanged" | "invalid" | "failed";

export type RowResult = {
  line: number;
  user_id: string;
  stock_keeping_unit: string;
  action: string;
  outcome: BulkOutcome;
  version: number | null;
  error: string | null;
};

type Reply = GrantReply | BundleReply;

export function resultOf(change: BulkChange, outcome: BulkOutcome, more: Partial<RowResult> = {}): RowResult {
  return {
    line: change.line,
    user_id: change.body.user_id,
    stock_keeping_unit: change.body.stock_keeping_unit,
    action: change.action.toLowerCase(),
    outcome,
    version: null,
    error: null,
    ...more,
  };
}

export function invalidResult(row: InvalidRow): RowResult {
  return {
    line: row.line,
    user_id: row.fields.user_id ?? "",
    stock_keeping_unit: row.fields.stock_keeping_unit ?? "",
    action: row.fields.action ?? "",
    outcome: "invalid",
    version: null,
    error: row.error,
  };
}

const errorOf = (body: unknown) => {
  const { code, message } = body as { code?: string; message?: string };
  return `${code}: ${message}`;
};

/** The rows of a batch from its reply: one row's command, or a bundle's items in the batch's order. */
export function resultsOfReply(changes: readonly BulkChange[], reply: Reply): RowResult[] {
  const done: BulkOutcome = reply.kind === "replayed" ? "already_applied" : "changed";
  if (reply.status === 409 && (reply.body as { code?: string }).code === "ENTITLEMENT_STATE_CONFLICT") {
    return changes.map((c) => resultOf(c, "unchanged"));
  }
  if (reply.status !== 200) return changes.map((c) => resultOf(c, "failed", { error: errorOf(reply.body) }));
  const body = reply.body as { version?: number; items?: { version: number; changed: boolean }[] };
  if (!body.items) return changes.map((c) => resultOf(c, done, { version: body.version ?? null }));
  return changes.map((c, i) => {
    const item = body.items?.[i];
    if (!item) return resultOf(c, "failed", { error: "the bundle's reply lacks this item" });
    return resultOf(c, item.changed ? done : "unchanged", { version: item.version });
  });
}
