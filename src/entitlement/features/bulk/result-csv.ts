// The result of a bulk run as CSV, one line per row of the file in its order: what it came to, the version it left
// and the error. Fields are quoted when they hold a quote, a comma, a line break or an outer space, so the file reads
// back to the same values, except one: the file is opened in spreadsheets, which run a cell that starts with `=`, `+`,
// `-`, `@`, a tab or a carriage return as a formula, and its user ids, SKUs and actions are whatever the uploaded file
// held (invalid rows too). Such a cell gets a leading `'`, which makes it text (OWASP's advice on CSV injection).
import type { RowResult } from "./outcome.ts";

export const RESULT_COLUMNS = [
  "line",
  "user_id",
  "stock_keeping_unit",
  "action",
  "outcome",
  "version",
  "error",
] as const;

const NEEDS_QUOTES = /[",\r\n]|^\s|\s$/;
const STARTS_FORMULA = /^[=+\-@\t\r]/;

export function csvField(value: string | number | null): string {
  const given = value === null ? "" : String(value);
  const text = STARTS_FORMULA.test(given) ? `'${given}` : given;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function resultCsv(results: readonly RowResult[]): string {
  const lines = results.map((r) => RESULT_COLUMNS.map((column) => csvField(r[column])).join(","));
  return `${[RESULT_COLUMNS.join(","), ...lines].join("\r\n")}\r\n`;
}

export type ResultCounts = Record<RowResult["outcome"], number>;

export function countOutcomes(results: readonly RowResult[]): ResultCounts {
  const counts: ResultCounts = { changed: 0, already_applied: 0, unchanged: 0, invalid: 0, failed: 0 };
  for (const r of results) counts[r.outcome]++;
  return counts;
}
