// A bulk file's rows as commands: each checked as the API checks a grant's or a revoke's body, so a row the API would
// refuse is invalid here with the same message. A user's SKU may be changed by one row of a file only: with two, their
// order would matter, and rows are applied concurrently.
import { ApiError } from "../../../shared/http/errors.ts";
import type { Action, CommandBody } from "../entitlements/model.ts";
import { assertNotPast, checkExpiresAt, checkFields } from "../entitlements/validation.ts";
import type { BulkFile, CsvRow } from "./csv.ts";

/** A valid row: what it asks for, as the body of the API's command. */
export type BulkChange = { line: number; action: Action; body: CommandBody };

export type InvalidRow = { line: number; fields: CsvRow["fields"]; error: string };

const ACTIONS: Record<string, Action> = { grant: "GRANT", revoke: "REVOKE" };

/** The purchase id (stored as source_id) of the rows that start at `line`: names the file and the row. */
export const bulkPurchaseId = (fileHash: string, line: number) => `bulk:${fileHash.slice(0, 16)}:${line}`;

function checkRow(file: BulkFile, row: CsvRow, now: Date): BulkChange {
  if (row.fieldCount !== file.columns.length) {
    throw new ApiError(400, "BAD_REQUEST", `the row has ${row.fieldCount} fields, the header ${file.columns.length}`);
  }
  const { fields } = row;
  const action = ACTIONS[(fields.action ?? "").trim().toLowerCase()];
  if (!action) throw new ApiError(400, "BAD_REQUEST", "action must be grant or revoke");
  const body = checkFields({ ...fields, purchase_id: bulkPurchaseId(file.hash, row.line) });
  const expiresAt = fields.expires_at ?? "";
  if (expiresAt === "") return { line: row.line, action, body };
  if (action === "REVOKE") throw new ApiError(400, "BAD_REQUEST", "expires_at applies to a grant only");
  const at = checkExpiresAt(expiresAt, now);
  assertNotPast(at, now);
  return { line: row.line, action, body: { ...body, expires_at: at } };
}

/** Every row of the file, valid or not, in the file's order. */
export function checkRows(file: BulkFile, now: Date): { changes: BulkChange[]; invalid: InvalidRow[] } {
  const changes: BulkChange[] = [];
  const invalid: InvalidRow[] = [];
  const seen = new Map<string, number>();
  for (const row of file.rows) {
    try {
      const change = checkRow(file, row, now);
      const pair = JSON.stringify([change.body.user_id, change.body.stock_keeping_unit]);
      const first = seen.get(pair);
      if (first !== undefined) {
        throw new ApiError(400, "BAD_REQUEST", `line ${first} already changes this user's stock_keeping_unit`);
      }
      seen.set(pair, row.line);
      changes.push(change);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      invalid.push({ line: row.line, fields: row.fields, error: error.message });
    }
  }
  return { changes, invalid };
}
