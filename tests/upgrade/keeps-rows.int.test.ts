// The upgrade from the previous release's schema keeps every row, keeps every function signature that release calls,
// and ends at the schema a fresh database gets.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { schemaText } from "../../src/entitlement/migrations.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { createEmptyTestDatabase, openTestDatabase, type TestDatabase } from "../support/infra.ts";
import { populatePreviousRelease } from "./populate.ts";
import { previousMigrations } from "./previous-release.ts";
import { everyRow, functionSignatures, schemaShape } from "./schema.ts";

let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createEmptyTestDatabase("upgrade_rows");
  sql = createSql({ url: db.url, schema: "entitlement", max: 2, applicationName: "test-upgrade" });
  await migrate(sql, "entitlement", { migrations: previousMigrations, functions: [] });
  await populatePreviousRelease(sql);
});

afterAll(async () => {
  await sql.end({ timeout: 5 });
  await db.drop();
});

test("the upgrade keeps every row and every function the previous release calls, and ends where a fresh schema does", async () => {
  const rows = await everyRow(sql, "entitlement");
  const signatures = await functionSignatures(sql, "entitlement");
  for (const table of ["entitlements", "entitlement_audit", "outbox_events", "idempotency_keys", "point_audit"]) {
    expect(rows[table]?.length, `the previous release wrote ${table}`).toBeGreaterThan(0);
  }

  const applied = await migrate(sql, "entitlement", schemaText);
  expect(applied).toEqual(schemaText.migrations.filter((m) => m.version > 16).map((m) => m.name));
  expect(await everyRow(sql, "entitlement"), "every row as it was").toEqual(rows);
  const after = await functionSignatures(sql, "entitlement");
  expect(
    signatures.filter((s) => !after.includes(s)),
    "no signature of the previous release is gone",
  ).toEqual([]);

  const fresh = await openTestDatabase("upgrade_fresh", { service: "entitlement", poolMax: 1 });
  try {
    expect(await schemaShape(sql, "entitlement"), "upgraded and fresh schemas agree").toEqual(
      await schemaShape(fresh.sql, "entitlement"),
    );
  } finally {
    await fresh.close();
  }
});
