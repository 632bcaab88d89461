// Paging of the history: `?limit=` and an opaque `?cursor=`, as the entitlement list pages (docs/api.md), with the
// shared helpers; the history's cursor key is the last change's audit id alone.
import { badRequest } from "../../../shared/http/errors.ts";
import * as paging from "../../../shared/http/paging.ts";

export { DEFAULT_LIMIT, LimitQuery, MAX_LIMIT, parseLimit } from "../../../shared/http/paging.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const encodeCursor = (auditId: string) => paging.encodeCursor([auditId]);

/** The audit id of `?cursor=`, or undefined when absent; 400 unless it is a cursor of this list. */
export function decodeCursor(text: string | undefined): string | undefined {
  const [id = ""] = paging.decodeCursor(text, 1) ?? [];
  if (text === undefined) return undefined;
  if (!UUID.test(id)) throw badRequest("cursor is invalid");
  return id;
}

/** One page out of `limit + 1` rows: the extra row only says that there is a next page. */
export function pageOf<T>(rows: T[], limit: number, keyOf: (row: T) => string) {
  return paging.pageOf(rows, limit, (row) => [keyOf(row)]);
}
