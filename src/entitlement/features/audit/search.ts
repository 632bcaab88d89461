// The audit search's input and pages: filters read from a query string and checked as the API checks the same fields
// (a user id, a SKU; a caller is a token name or `console:<name>`, or with a trailing `*` or `:` every caller that
// starts with it; an action; instants with an offset), and an opaque cursor holding the last row's key.
import { Value } from "@sinclair/typebox/value";
import type { Db } from "../../../shared/db.ts";
import { badRequest } from "../../../shared/http/errors.ts";
import { decodeCursor, encodeCursor } from "../../../shared/http/paging.ts";
import { isPlainText, isUuid } from "../../../shared/ids.ts";
import { parseInstant } from "../../../shared/instant.ts";
import { StockKeepingUnit, UserId } from "../entitlements/model.ts";
import { checkField } from "../entitlements/validation.ts";
import { AuditAction } from "../history/model.ts";
import { type AuditEntry, type AuditFilter, type AuditKey, searchAudit } from "./queries.ts";

export const AUDIT_PAGE = 50;
const KEY_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

const given = (query: URLSearchParams, name: string) => {
  const value = query.get(name);
  return value === null || value === "" ? undefined : value;
};

function instant(name: string, text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const at = parseInstant(text);
  if (!at) throw badRequest(`${name} must be an ISO-8601 date-time with an offset, e.g. 2026-11-27T00:00:00Z`);
  return at;
}

/** The filters of a search form; 400 for a value the API would refuse for that field. */
export function readAuditFilter(query: URLSearchParams): AuditFilter {
  const filter: AuditFilter = {};
  const userId = given(query, "user_id");
  if (userId !== undefined) filter.userId = checkField("user_id", UserId, userId);
  const sku = given(query, "sku");
  if (sku !== undefined) filter.sku = checkField("stock_keeping_unit", StockKeepingUnit, sku);
  const caller = given(query, "caller");
  if (caller !== undefined) {
    if (!isPlainText(caller, 1, 200)) throw badRequest("caller must be 1-200 characters without control characters");
    // No caller ends with `:` (`console:<name>`), so `console:` is a prefix as `console:*` is.
    const prefix = caller.endsWith("*") ? caller.slice(0, -1) : caller.endsWith(":") ? caller : undefined;
    if (prefix === "" || prefix?.includes("*")) {
      throw badRequest("caller: a * may only end a prefix of at least one character (console:*)");
    }
    if (prefix === undefined) filter.caller = caller;
    else filter.callerPrefix = prefix;
  }
  const action = given(query, "action")?.toUpperCase();
  if (action !== undefined) {
    if (!Value.Check(AuditAction, action)) throw badRequest("action must be GRANT, REVOKE, EXTEND or EXPIRE");
    filter.action = action;
  }
  const from = instant("from", given(query, "from"));
  const to = instant("to", given(query, "to"));
  if (from) filter.from = from;
  if (to) filter.to = to;
  return filter;
}

function readAuditCursor(text: string | undefined): AuditKey | undefined {
  const key = decodeCursor(text, 2);
  if (!key) return undefined;
  const [occurredAt = "", auditId = ""] = key;
  if (!KEY_INSTANT.test(occurredAt) || !isUuid(auditId)) throw badRequest("cursor is invalid");
  return { occurredAt, auditId };
}

export type AuditPage = { entries: AuditEntry[]; nextCursor: string | null };

/** One page of the search, newest first, after `cursor` (the previous page's nextCursor). */
export async function searchAuditPage(
  db: Db,
  args: { filter: AuditFilter; cursor?: string; limit?: number },
): Promise<AuditPage> {
  const limit = args.limit ?? AUDIT_PAGE;
  const after = readAuditCursor(args.cursor);
  const rows = await searchAudit(db, { filter: args.filter, limit: limit + 1, ...(after ? { after } : {}) });
  const entries = rows.slice(0, limit);
  const last = entries.at(-1);
  const more = rows.length > limit && last !== undefined;
  return { entries, nextCursor: more ? encodeCursor([last.occurred_key, last.audit_id]) : null };
}
