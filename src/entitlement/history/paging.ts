// Paging of the history: `?limit=` 1–1000 (default 100) and an opaque `?cursor=`, as the list pages (CONTRACT §3.1).
// The cursor is the last change's audit id, base64url-encoded so clients treat it as opaque.
import { badRequest } from "../../shared/http/errors.ts";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function parseLimit(text: string | undefined): number {
  if (text === undefined) return DEFAULT_LIMIT;
  const n = /^\d{1,4}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) throw badRequest(`limit must be an integer from 1 to ${MAX_LIMIT}`);
  return n;
}

export const encodeCursor = (auditId: string) => Buffer.from(auditId).toString("base64url");

export function decodeCursor(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const id = /^[A-Za-z0-9_-]{1,64}$/.test(text) ? Buffer.from(text, "base64url").toString() : "";
  if (!UUID.test(id)) throw badRequest("cursor is invalid");
  return id;
}

/** One page out of `limit + 1` rows: the extra row only says that there is a next page. */
export function pageOf<T>(rows: T[], limit: number, keyOf: (row: T) => string) {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(keyOf(last)) : null };
}
