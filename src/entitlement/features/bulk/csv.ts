// A bulk file as rows: CSV (RFC 4180 quoting, a UTF-8 byte order mark, CRLF or LF, quoted fields over several lines)
// read by csv-parse, the first record its header. What makes the whole file unusable (not UTF-8, too large, too many
// rows, a quote left open, a header without the columns) is a BulkFileError naming the line; a row with the wrong
// number of fields is only that row's problem and is reported with it (plan.ts).
import { CsvError, parse } from "csv-parse/sync";

/** The largest file taken: 10,000 rows of the longest ids and reasons, quoted, fit in it. */
export const MAX_BULK_BYTES = 8 * 1024 * 1024;
export const MAX_BULK_ROWS = 10_000;

export const REQUIRED_COLUMNS = ["user_id", "stock_keeping_unit", "action", "reason"] as const;
export const OPTIONAL_COLUMNS = ["expires_at"] as const;
export type BulkColumn = (typeof REQUIRED_COLUMNS)[number] | (typeof OPTIONAL_COLUMNS)[number];

/** A record of the file: the line it starts on (the header is line 1) and its fields by column. */
export type CsvRow = { line: number; fields: Partial<Record<BulkColumn, string>>; fieldCount: number };

export type BulkFile = {
  /** SHA-256 of the file's bytes, hex: the seed of every idempotency key of its rows. */
  hash: string;
  columns: BulkColumn[];
  rows: CsvRow[];
};

export class BulkFileError extends Error {}

type Parsed = { record: string[]; info: { lines: number; empty_lines: number } };

function readRecords(bytes: Uint8Array): Parsed[] {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new BulkFileError("the file is not UTF-8 text");
  }
  try {
    return parse(text, {
      bom: true,
      info: true,
      relax_column_count: true,
      skip_empty_lines: true,
    }) as unknown as Parsed[];
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const line = (error as CsvError & { lines?: number }).lines;
    throw new BulkFileError(`the file is not valid CSV${line ? ` (line ${line})` : ""}: ${error.message}`);
  }
}

function readHeader(record: string[]): BulkColumn[] {
  const known: readonly string[] = [...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS];
  const columns = record.map((name) => name.trim());
  const unknown = columns.filter((name) => !known.includes(name));
  if (unknown.length > 0) throw new BulkFileError(`line 1: unknown column(s) ${unknown.join(", ")}`);
  const missing = REQUIRED_COLUMNS.filter((name) => !columns.includes(name));
  if (missing.length > 0) throw new BulkFileError(`line 1: the header lacks ${missing.join(", ")}`);
  const repeated = columns.find((name, i) => columns.indexOf(name) !== i);
  if (repeated) throw new BulkFileError(`line 1: the column ${repeated} appears twice`);
  return columns as BulkColumn[];
}

/** Reads a bulk file; throws BulkFileError for a file that cannot be used at all. */
export function readBulkFile(bytes: Uint8Array): BulkFile {
  if (bytes.length > MAX_BULK_BYTES) throw new BulkFileError(`the file is larger than ${MAX_BULK_BYTES} bytes`);
  const records = readRecords(bytes);
  const [header, ...body] = records;
  if (!header) throw new BulkFileError("the file is empty: a header row is required");
  if (body.length > MAX_BULK_ROWS) throw new BulkFileError(`the file has more than ${MAX_BULK_ROWS} rows`);
  const columns = readHeader(header.record);
  let previous = header.info;
  const rows = body.map(({ record, info }) => {
    // info.lines is where a record ends; it starts after the previous one and the empty lines skipped since.
    const line = previous.lines + 1 + (info.empty_lines - previous.empty_lines);
    previous = info;
    const fields: CsvRow["fields"] = {};
    columns.forEach((name, i) => {
      if (record[i] !== undefined) fields[name] = record[i];
    });
    return { line, fields, fieldCount: record.length };
  });
  return { hash: new Bun.CryptoHasher("sha256").update(bytes).digest("hex"), columns, rows };
}
