// Paging of list responses (docs/api.md): `?limit=` 1–1000 (default 100) and an opaque `?cursor=`, the
// `next_cursor` of the previous page. A cursor is the last row's sort key as JSON, base64url-encoded so that clients
// treat it as opaque; each list decides what its key holds and checks it when it comes back.
import { Type } from "@sinclair/typebox";
import { badRequest } from "./errors.ts";
import { DOCUMENTED_AS } from "./openapi-refine.ts";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1_000;

/** `?limit=`: absent → the default; anything but an integer from 1 to 1000 → 400. */
export function parseLimit(text: string | undefined): number {
  if (text === undefined) return DEFAULT_LIMIT;
  const n = /^\d{1,4}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) throw badRequest(`limit must be an integer from 1 to ${MAX_LIMIT}`);
  return n;
}

/**
 * `?limit=` in a route's query schema: read as the text it is (parseLimit checks it) and documented as the integer it
 * must be, so that a generated client takes a number.
 */
export const LimitQuery = (description: string) =>
  Type.Optional(
    Type.String({
      description,
      [DOCUMENTED_AS]: { type: "integer", minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
    }),
  );

export function encodeCursor(key: readonly string[]): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

/** The key of `?cursor=`, or undefined when absent; 400 unless it is a cursor this service made with `size` parts. */
export function decodeCursor(text: string | undefined, size: number): string[] | undefined {
  if (text === undefined) return undefined;
  let key: unknown;
  try {
    key = /^[A-Za-z0-9_-]{1,1024}$/.test(text) ? JSON.parse(Buffer.from(text, "base64url").toString()) : undefined;
  } catch {
    key = undefined;
  }
  if (!Array.isArray(key) || key.length !== size || !key.every((part) => typeof part === "string")) {
    throw badRequest("cursor is invalid");
  }
  return key as string[];
}

/** One page out of `limit + 1` rows: the extra row only says that there is a next page. */
export function pageOf<T>(rows: T[], limit: number, keyOf: (row: T) => readonly string[]) {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(keyOf(last)) : null };
}
