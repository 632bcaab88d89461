// The upgrade from the previous release's schema keeps every row, keeps every function that release calls answering
// its calls as they did, and ends at the schema a fresh database gets.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { schemaText } from "../../src/entitlement/migrations.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { createEmptyTestDatabase, openTestDatabase, type TestDatabase } from "../support/infra.ts";
import { populatePreviousRelease } from "./populate.ts";
import { git } from "./previous-build.ts";
import { PREVIOUS_COMMIT, PREVIOUS_LAST_MIGRATION, previousSchema } from "./previous-release.ts";
import { previousSourceFolder } from "./previous-source.ts";
import { everyRow, functionCalls, functionSignatures, resolveCalls, schemaShape, tableColumns } from "./schema.ts";

/**
 * What the previous release shipped only for the release before it: entry points no code of it calls (it calls the
 * functions they hand each action to), which this release drops (migration 022). A test below reads the previous
 * release's own source to hold this list to that.
 */
const KEPT_ONLY_FOR_ITS_PREDECESSOR = ["entitlement_change", "point_command"];
const name = (signature: string) => signature.slice(0, signature.indexOf("("));
const stillOwed = (signature: string) => !KEPT_ONLY_FOR_ITS_PREDECESSOR.includes(name(signature));

let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createEmptyTestDatabase("upgrade_rows");
  sql = createSql({ url: db.url, schema: "entitlement", max: 2, applicationName: "test-upgrade" });
  await migrate(sql, "entitlement", previousSchema);
  await populatePreviousRelease(sql);
}, 60_000);

afterAll(async () => {
  await sql.end({ timeout: 5 });
  await db.drop();
});

test("the upgrade keeps every row and every function the previous release calls, and ends where a fresh schema does", async () => {
  const rows = await everyRow(sql, "entitlement");
  const columns = await tableColumns(sql, "entitlement");
  const signatures = (await functionSignatures(sql, "entitlement")).filter(stillOwed);
  const calls = (await functionCalls(sql, "entitlement")).filter((call) => stillOwed(call.signature));
  const answered = await resolveCalls(sql, calls);
  for (const table of [
    "entitlements",
    "entitlement_audit",
    "entitlement_expiries",
    "outbox_events",
    "idempotency_keys",
    "point_reservations",
    "point_audit",
    "point_transactions",
    "point_balances",
  ]) {
    expect(rows[table]?.length, `the previous release wrote ${table}`).toBeGreaterThan(0);
  }

  const applied = await migrate(sql, "entitlement", schemaText);
  expect(applied).toEqual(schemaText.migrations.filter((m) => m.version > PREVIOUS_LAST_MIGRATION).map((m) => m.name));
  // Every row as it was, and every column a later migration added to it empty (what is there is the previous
  // release's, which never wrote those).
  const upgraded = await everyRow(sql, "entitlement");
  const previousColumns =
    (table: string) =>
    (row: unknown): unknown =>
      Object.fromEntries(Object.entries(row as object).filter(([k]) => columns[table]?.includes(k)));
  const addedColumns = (table: string) => (row: unknown) =>
    Object.entries(row as object).filter(([k, v]) => !columns[table]?.includes(k) && v !== null);
  expect(
    Object.fromEntries(Object.entries(upgraded).map(([table, r]) => [table, r.map(previousColumns(table))])),
    "every row as it was",
  ).toEqual(rows);
  expect(
    Object.entries(upgraded).flatMap(([table, r]) => r.flatMap(addedColumns(table))),
    "added columns are empty",
  ).toEqual([]);
  // A signature may grow a last argument with a default (a new function replaces the old one, migration 018): the
  // previous release's calls, by position and by name, still resolve to one function with the same result columns.
  const after = (await functionSignatures(sql, "entitlement")).map(name);
  expect(
    signatures.map(name).filter((s) => !after.includes(s)),
    "no function of the previous release is gone but those kept only for its predecessor",
  ).toEqual([]);
  expect(
    after.filter((s) => KEPT_ONLY_FOR_ITS_PREDECESSOR.includes(s)),
    "those are dropped",
  ).toEqual([]);
  expect(await resolveCalls(sql, calls), "every call of the previous release's functions resolves as it did").toEqual(
    answered,
  );

  const fresh = await openTestDatabase("upgrade_fresh", { service: "entitlement", poolMax: 1 });
  try {
    expect(await schemaShape(sql, "entitlement"), "upgraded and fresh schemas agree").toEqual(
      await schemaShape(fresh.sql, "entitlement"),
    );
  } finally {
    await fresh.close();
  }
}, 60_000);

// The schema is read from the release's source extracted into .data/ once per machine: a folder left half-written or
// changed since would model another schema than the one it shipped.
test("the previous release's schema here is the one its commit shipped, file for file", () => {
  const shipped = (path: string) => {
    const show = git(["show", `${PREVIOUS_COMMIT}:${path}`]);
    return show.exitCode === 0 ? show.stdout.toString() : `${path} is not in ${PREVIOUS_COMMIT}`;
  };
  for (const m of previousSchema.migrations) {
    expect(m.sql, `${m.name} as it shipped`).toBe(shipped(`db/entitlement/${m.name}`));
  }
  for (const f of previousSchema.functions) {
    expect(f.sql, `${f.name}.sql as it shipped`).toBe(shipped(`db/entitlement/functions/${f.name}.sql`));
  }
  const names = (folder: string) =>
    git(["ls-tree", "--name-only", `${PREVIOUS_COMMIT}:${folder}`])
      .stdout.toString()
      .split("\n")
      .filter((n) => n.endsWith(".sql"));
  expect(
    previousSchema.migrations.map((m) => m.name),
    "every migration it shipped",
  ).toEqual(names("db/entitlement"));
  expect(
    previousSchema.functions.map((f) => `${f.name}.sql`),
    "every function it shipped",
  ).toEqual(names("db/entitlement/functions"));
});

test("what this release drops of the previous release's functions is called by no code of that release", () => {
  const root = previousSourceFolder();
  const files = [
    ...[...new Bun.Glob("src/**/*.ts").scanSync(root)],
    ...[...new Bun.Glob("db/entitlement/functions/*.sql").scanSync(root)],
  ];
  expect(files.length, "the previous release's source is there").toBeGreaterThan(50);
  for (const fn of KEPT_ONLY_FOR_ITS_PREDECESSOR) {
    const callers = files.filter(
      (file) =>
        !file.endsWith(`/${fn}.sql`) && new RegExp(`\\b${fn}\\s*\\(`).test(readFileSync(join(root, file), "utf8")),
    );
    expect(callers, `files of ${PREVIOUS_COMMIT} that call ${fn}`).toEqual([]);
  }
  for (const fn of ["entitlement_grant", "point_reserve"]) {
    const callers = files.filter((file) => new RegExp(`\\b${fn}\\s*\\(`).test(readFileSync(join(root, file), "utf8")));
    expect(callers.length, `the search finds the calls of ${fn} it does make`).toBeGreaterThan(0);
  }
});
