import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import postgres from "postgres";
import { migrations as entitlementMigrations } from "../../src/entitlement/migrations.ts";
import { migrations as notificationMigrations } from "../../src/notification/migrations.ts";
import { sha256Int64 } from "../../src/shared/ids.ts";
import { migrate, migrationList } from "../../src/shared/migrate.ts";
import { postgresAdminUrl, uniqueName } from "../support/infra.ts";

const folder = (service: string) =>
  readdirSync(new URL(`../../db/${service}/`, import.meta.url))
    .filter((f) => f.endsWith(".sql"))
    .sort();

describe("migration list", () => {
  test("the embedded list matches each db/<service>/ folder", () => {
    expect(entitlementMigrations.map((m) => m.name)).toEqual(folder("entitlement"));
    expect(notificationMigrations.map((m) => m.name)).toEqual(folder("notification"));
  });

  test("a preparation is split into its transactions; one without its migration is refused", () => {
    const [m] = migrationList(
      { "001_a.sql": "select 1" },
      { "001_a.sql": "select 2;\n-- next transaction\nselect 3;\n" },
    );
    expect(m?.prepare?.map((part) => part.trim())).toEqual(["select 2;", "select 3;"]);
    expect(() => migrationList({ "001_a.sql": "select 1" }, { "002_b.sql": "select 2" })).toThrow(
      "a preparation without its migration: 002_b.sql",
    );
  });
});

describe("migration runner", () => {
  let admin: postgres.Sql;
  let sql: postgres.Sql;
  const name = uniqueName("test_migrate");

  beforeAll(async () => {
    const base = await postgresAdminUrl();
    admin = postgres(base, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}"`);
    const u = new URL(base);
    u.pathname = `/${name}`;
    sql = postgres(u.toString(), { max: 4, onnotice: () => {} });
  });
  // Dropping the database took more than the default 5 s of a hook on the loaded shared machine.
  afterAll(async () => {
    await sql.end();
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  }, 60_000);

  test("concurrent runs apply each migration once, each service in its own schema", async () => {
    const results = await Promise.all([
      migrate(sql, "entitlement", entitlementMigrations),
      migrate(sql, "entitlement", entitlementMigrations),
      migrate(sql, "notification", notificationMigrations),
    ]);
    expect(results[0].length + results[1].length).toBe(entitlementMigrations.length);
    expect(results[2]).toHaveLength(notificationMigrations.length);
    const tables = await sql<{ schema: string; table: string }[]>`
      select t.table_schema as schema, t.table_name as table from information_schema.tables t
      join pg_class c on c.oid = format('%I.%I', t.table_schema, t.table_name)::regclass
      where t.table_schema in ('entitlement', 'notification') and not c.relispartition order by 1, 2`;
    expect(tables.map((t) => `${t.schema}.${t.table}`)).toEqual([
      "entitlement.entitlement_audit",
      "entitlement.entitlement_expiries",
      "entitlement.entitlements",
      "entitlement.idempotency_keys",
      "entitlement.outbox_events",
      "entitlement.point_audit",
      "entitlement.point_balances",
      "entitlement.point_reservations",
      "entitlement.point_transactions",
      "entitlement.schema_migrations",
      "notification.notification_dlq",
      "notification.notification_nats_dlq",
      "notification.notification_user_seqs",
      "notification.notifications",
      "notification.player_stream_tickets",
      "notification.processed_events",
      "notification.schema_migrations",
      "notification.webhook_attempts",
      "notification.webhook_deliveries",
      "notification.webhook_endpoints",
    ]);
    expect(await migrate(sql, "entitlement", entitlementMigrations)).toEqual([]);
  });

  test("a current schema is recognised without the migration lock (a start does not wait for a migrating replica)", async () => {
    await migrate(sql, "entitlement", entitlementMigrations);
    const holder = await sql.reserve();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await holder`select pg_advisory_lock(${sha256Int64("migrate:entitlement").toString()}::bigint)`;
      const applied = await Promise.race([
        migrate(sql, "entitlement", entitlementMigrations),
        new Promise((resolve) => {
          timer = setTimeout(() => resolve("waited for the lock"), 10_000);
        }),
      ]);
      expect(applied, "nothing to apply, and no wait for the lock").toEqual([]);
    } finally {
      clearTimeout(timer);
      await holder`select pg_advisory_unlock_all()`;
      holder.release();
    }
  });

  test("a preparation runs first, each part in a transaction of its own, and not again once applied", async () => {
    await migrate(sql, "entitlement", entitlementMigrations);
    const next = entitlementMigrations.length + 1;
    const withPreparation = [
      ...entitlementMigrations,
      {
        version: next,
        name: "prepared.sql",
        sql: "insert into prep (step, tx) values ('migration', txid_current())",
        prepare: [
          "create table if not exists prep (step text, tx bigint); insert into prep values ('one', txid_current());",
          "insert into prep (step, tx) values ('two', txid_current())",
        ],
      },
    ];
    expect(await migrate(sql, "entitlement", withPreparation)).toEqual(["prepared.sql"]);
    const rows = await sql<{ step: string; tx: string }[]>`select step, tx from entitlement.prep order by tx`;
    expect(
      rows.map((r) => r.step),
      "in the schema's search_path, in order",
    ).toEqual(["one", "two", "migration"]);
    expect(new Set(rows.map((r) => r.tx)).size, "three transactions").toBe(3);
    expect(await migrate(sql, "entitlement", withPreparation)).toEqual([]);
    const [count] = await sql`select count(*)::int as n from entitlement.prep`;
    expect(count?.n, "an applied migration's preparation does not run again").toBe(3);
    await sql`delete from entitlement.schema_migrations where version = ${next}`;
    await sql`drop table entitlement.prep`;
  });

  test("a failing migration leaves nothing behind", async () => {
    const broken = [
      ...entitlementMigrations,
      { version: entitlementMigrations.length + 1, name: "x.sql", sql: "create table half (id int); select 1/0;" },
    ];
    await expect(migrate(sql, "entitlement", broken)).rejects.toThrow();
    const [row] = await sql`select to_regclass('entitlement.half') as t`;
    expect(row?.t).toBeNull();
  });
});
