// The monthly partitions of the history tables: the migration converts a populated deployment without losing a row,
// creates months ahead and a default partition that catches what no month covers; maintenance creates the next months
// (moving rows the default caught into theirs) as the runtime role, and the audit retention detaches and drops whole
// months. The operator command (`entitlement partitions`) is in tests/ops/partitions.int.test.ts.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { migrations, schemaText } from "../../src/entitlement/migrations.ts";
import { monthStart, runPartitionMaintenanceOnce } from "../../src/entitlement/work/partitions/maintenance.ts";
import { listHistoryPartitions } from "../../src/entitlement/work/partitions/queries.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { postgresAdminUrl, uniqueName } from "../support/infra.ts";

setDefaultTimeout(90_000);

const PARTITIONING = migrations.findIndex((m) => m.name === "011_history_partitions.sql");
const database = uniqueName("test_partitions");
const runtimeRole = uniqueName("partitions_runtime");
let admin: postgres.Sql;
let sql: Sql;
let runtime: Sql;

const urlOf = (base: string, user?: string) => {
  const u = new URL(base);
  u.pathname = `/${database}`;
  if (user) u.username = user;
  return u.toString();
};
const month = (offset: number) => monthStart(new Date(), offset);
const suffix = (d: Date) => d.toISOString().slice(0, 7).replace("-", "_");
const settings = { intervalMs: 60_000, monthsAhead: 3, auditRetentionMs: 0 };

/** A fingerprint of every row of a table, independent of where the rows are stored. */
async function fingerprint(table: string): Promise<{ n: number; digest: string }> {
  const [row] = await sql.unsafe<{ n: number; digest: string }[]>(
    `select count(*)::int as n, md5(string_agg(t::text, ',' order by t::text)) as digest from ${table} t`,
  );
  return row ?? { n: 0, digest: "" };
}

async function partitionOf(table: string, where: string): Promise<string[]> {
  const rows = await sql.unsafe<{ p: string }[]>(
    `select distinct tableoid::regclass::text as p from ${table} where ${where} order by 1`,
  );
  return rows.map((r) => r.p);
}

beforeAll(async () => {
  const base = await postgresAdminUrl();
  admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${database}"`);
  await admin.unsafe(`create role "${runtimeRole}" login in role entitlement_runtime`);
  sql = createSql({ url: urlOf(base), schema: "entitlement", max: 2, applicationName: "test-partitions" });
  runtime = createSql({ url: urlOf(base, runtimeRole), schema: "entitlement", max: 1, applicationName: "test-rt" });
  await migrate(sql, "entitlement", { migrations: migrations.slice(0, PARTITIONING), functions: [] });
  // A year of history before the conversion, up to this very moment.
  await sql`
    insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, source, detail)
    select gen_random_uuid(), now() - (i * interval '1 day'), 'user-' || (i % 7), 'sku-' || (i % 3), 'GRANT', i % 4,
           'purchase', jsonb_build_object('i', i)
    from generate_series(0, 400) as i`;
  await sql`
    insert into point_transactions (transaction_id, reservation_id, user_id, point_amount, reason, created_at)
    select gen_random_uuid(), gen_random_uuid(), 'user-' || (i % 7), i, 'match', now() - (i * interval '1 day')
    from generate_series(0, 400) as i`;
  await sql`
    insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action)
    select gen_random_uuid(), now() - (i * interval '1 day'), gen_random_uuid(), 'user-' || (i % 7), 'EXECUTE'
    from generate_series(0, 400) as i`;
}, 60_000);
afterAll(async () => {
  await sql?.end();
  await runtime?.end();
  await admin?.unsafe(`drop database if exists "${database}" with (force)`);
  await admin?.unsafe(`drop role if exists "${runtimeRole}"`);
  await admin?.end();
}, 30_000);

describe("the migration on a populated database", () => {
  test("keeps every row, attaches the old table before the month after next, creates three months and a default", async () => {
    const tables = ["entitlement_audit", "point_transactions", "point_audit"];
    const before = await Promise.all(tables.map(fingerprint));
    await migrate(sql, "entitlement", schemaText);
    expect(await Promise.all(tables.map(fingerprint)), "every row is still there, unchanged").toEqual(before);
    expect(before[0]?.n).toBe(401);

    const partitions = await listHistoryPartitions(sql);
    for (const parent of tables) {
      const names = partitions.filter((p) => p.parent === parent).map((p) => p.partition);
      expect(names, `${parent}: the old table, three months from the next one, and a default`).toEqual([
        `${parent}_before_${suffix(month(2))}`,
        `${parent}_${suffix(month(2))}`,
        `${parent}_${suffix(month(3))}`,
        `${parent}_${suffix(month(4))}`,
        `${parent}_default`,
      ]);
      expect(await partitionOf(parent, "true"), "the old rows live in the old table, now a partition").toEqual([
        `${parent}_before_${suffix(month(2))}`,
      ]);
    }
    const old = partitions.find((p) => p.partition === `entitlement_audit_before_${suffix(month(2))}`);
    expect(old).toMatchObject({ from_at: null, to_at: month(2), is_default: false });
    // The bound was proved before the migration's transaction, while writers could go on; inside it, nothing was
    // validated (that would have added <old table>_range and scanned the table under the rename's lock).
    const constraints = await sql<{ name: string; validated: boolean }[]>`
      select conname as name, convalidated as validated from pg_constraint
      where conname like '%before_partitioning' or conname like '%\_range' order by 1`;
    expect([...constraints]).toEqual(
      ["entitlement_audit", "point_audit", "point_transactions"].map((t) => ({
        name: `${t}_before_partitioning`,
        validated: true,
      })),
    );
  });

  test("the preparation is done again harmlessly: the partitioned tables are left as they are", async () => {
    const preparing = migrations.filter((m) => m.prepare);
    expect(
      preparing.map((m) => m.name),
      "011 is the migration with a preparation",
    ).toEqual(["011_history_partitions.sql"]);
    const reserved = await sql.reserve();
    try {
      await reserved`set search_path to entitlement`;
      for (const part of preparing[0]?.prepare ?? []) await reserved.unsafe(part);
    } finally {
      await reserved`reset search_path`;
      reserved.release();
    }
    const [n] = await sql`select count(*)::int as n from pg_constraint where conname like '%before_partitioning'`;
    expect(n?.n).toBe(3);
  });

  test("the old indexes were adopted, not rebuilt, and the history index serves the parent", async () => {
    const [index] = await sql<{ parent: string }[]>`
      select i.inhparent::regclass::text as parent from pg_inherits i
      where i.inhrelid = ${`entitlement_audit_before_${suffix(month(2))}_entitlement_audit_history_idx`}::regclass`;
    expect(index?.parent, "the old table's history index is a partition of the parent's").toBe(
      "entitlement_audit_history_idx",
    );
  });

  test("a row of a month ahead goes to its partition, one outside every month to the default", async () => {
    const ahead = new Date(month(2).getTime() + 3_600_000);
    const far = new Date("2200-01-01T00:00:00Z");
    await sql`
      insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action)
      values (gen_random_uuid(), ${ahead}, 'ahead', 'sku', 'GRANT'), (gen_random_uuid(), ${far}, 'far', 'sku', 'GRANT')`;
    expect(await partitionOf("entitlement_audit", "user_id = 'ahead'")).toEqual([
      `entitlement_audit_${suffix(month(2))}`,
    ]);
    expect(await partitionOf("entitlement_audit", "user_id = 'far'")).toEqual(["entitlement_audit_default"]);
  });
});

describe("maintenance", () => {
  test("as the runtime role, creates the months ahead of its clock and moves rows the default caught", async () => {
    const later = new Date("2199-11-15T00:00:00Z");
    const report = await runPartitionMaintenanceOnce({
      sql: runtime,
      log: silentLogger,
      now: () => later,
      settings,
    });
    expect(report.created).toContain("entitlement_audit_2200_01");
    expect(report.created).toHaveLength(3 * 4);
    expect(report.defaultRows, "the row of 2200-01 moved into its month").toEqual({
      entitlement_audit: 0,
      point_transactions: 0,
      point_audit: 0,
    });
    expect(await partitionOf("entitlement_audit", "user_id = 'far'")).toEqual(["entitlement_audit_2200_01"]);
    const again = await runPartitionMaintenanceOnce({ sql: runtime, log: silentLogger, now: () => later, settings });
    expect(again.created, "a second run finds every month there").toEqual([]);
  });

  test("counts the rows in a default partition", async () => {
    await sql`
      insert into point_transactions (transaction_id, reservation_id, user_id, point_amount, created_at)
      values (gen_random_uuid(), gen_random_uuid(), 'far', 1, '2300-01-01T00:00:00Z')`;
    const report = await runPartitionMaintenanceOnce({
      sql: runtime,
      log: silentLogger,
      now: () => new Date(),
      settings,
    });
    expect(report.defaultRows.point_transactions).toBe(1);
    await sql`delete from point_transactions where created_at = '2300-01-01T00:00:00Z'`;
  });
});

describe("audit retention", () => {
  test("detaches and drops the audit months wholly older than the retention, never the ledger's", async () => {
    const now = new Date(month(4).getTime() + 86_400_000);
    const auditRows = async () => (await fingerprint("entitlement_audit")).n;
    const rowsBefore = await auditRows();
    const report = await runPartitionMaintenanceOnce({
      sql: runtime,
      log: silentLogger,
      now: () => now,
      // Everything before month(3) is older than the retention: the old table and month(2).
      settings: { ...settings, auditRetentionMs: now.getTime() - month(3).getTime() },
    });
    expect(report.dropped).toEqual([
      `entitlement_audit_before_${suffix(month(2))}`,
      `entitlement_audit_${suffix(month(2))}`,
    ]);
    const left = (await listHistoryPartitions(sql)).map((p) => p.partition);
    expect(left).not.toContain(`entitlement_audit_before_${suffix(month(2))}`);
    expect(left).toContain(`entitlement_audit_${suffix(month(3))}`);
    expect(left, "the ledger is kept").toContain(`point_transactions_before_${suffix(month(2))}`);
    const [stray] = await sql`select to_regclass(${`entitlement_audit_before_${suffix(month(2))}`}) as t`;
    expect(stray?.t, "the detached month is dropped, not left behind").toBeNull();
    expect(await auditRows(), "the 401 old rows and the one of month(2) went with their partitions").toBe(
      rowsBefore - 402,
    );
  });
});

describe("the migration with the bound proved beforehand", () => {
  const other = uniqueName("test_partitions_proved");
  let db: Sql;
  afterAll(async () => {
    await db?.end();
    await admin?.unsafe(`drop database if exists "${other}" with (force)`);
  }, 30_000);

  test("uses the operator's validated <table>_before_partitioning constraint and scans nothing itself", async () => {
    await admin.unsafe(`create database "${other}"`);
    const u = new URL(await postgresAdminUrl());
    u.pathname = `/${other}`;
    db = createSql({ url: u.toString(), schema: "entitlement", max: 1, applicationName: "test-partitions-proved" });
    await migrate(db, "entitlement", { migrations: migrations.slice(0, PARTITIONING), functions: [] });
    await db`
      insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action)
      select gen_random_uuid(), now() - i * interval '1 day', 'u', 'sku', 'GRANT' from generate_series(0, 99) as i`;
    // The bound is two months ahead, the first instant of a month: rows keep coming in until the upgrade.
    await db.unsafe(`alter table entitlement_audit add constraint entitlement_audit_before_partitioning
      check (occurred_at < '${month(2).toISOString()}') not valid`);
    await db`alter table entitlement_audit validate constraint entitlement_audit_before_partitioning`;
    await migrate(db, "entitlement", schemaText);
    const audit = (await listHistoryPartitions(db)).filter((p) => p.parent === "entitlement_audit");
    expect(audit.map((p) => p.partition)).toEqual([
      `entitlement_audit_before_${suffix(month(2))}`,
      `entitlement_audit_${suffix(month(2))}`,
      `entitlement_audit_${suffix(month(3))}`,
      `entitlement_audit_${suffix(month(4))}`,
      "entitlement_audit_default",
    ]);
    expect(audit[0]?.to_at, "the old table ends where the operator's bound does").toEqual(month(2));
    const [range] = await db`
      select count(*)::int as n from pg_constraint where conname = ${`entitlement_audit_before_${suffix(month(2))}_range`}`;
    expect(range?.n, "no constraint of its own: nothing was validated inside the migration").toBe(0);
    const [rows] = await db`select count(*)::int as n from entitlement_audit`;
    expect(rows?.n).toBe(100);
  });
});
