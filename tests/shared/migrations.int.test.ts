import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import postgres from "postgres";
import {
  functions as entitlementFunctions,
  migrations as entitlementMigrations,
  schemaText as entitlementSchema,
} from "../../src/entitlement/migrations.ts";
import {
  functions as notificationFunctions,
  migrations as notificationMigrations,
  schemaText as notificationSchema,
} from "../../src/notification/migrations.ts";
import { sha256Int64 } from "../../src/shared/ids.ts";
import { migrate, migrationList } from "../../src/shared/migrate.ts";
import { functionList } from "../../src/shared/schema-functions.ts";
import { postgresAdminUrl, uniqueName } from "../support/infra.ts";

const folder = (path: string) =>
  readdirSync(new URL(`../../db/${path}/`, import.meta.url))
    .filter((f) => f.endsWith(".sql"))
    .sort();

describe("migration list", () => {
  test("the embedded list matches each db/<service>/ folder", () => {
    expect(entitlementMigrations.map((m) => m.name)).toEqual(folder("entitlement"));
    expect(notificationMigrations.map((m) => m.name)).toEqual(folder("notification"));
    expect(entitlementFunctions.map((f) => `${f.name}.sql`)).toEqual(folder("entitlement/functions"));
    expect(notificationFunctions.map((f) => `${f.name}.sql`)).toEqual(folder("notification/functions"));
  });

  test("a function file defines exactly one function, named as the file, with create or replace", () => {
    const ok = "create or replace function f_one(p int) returns int language sql as $$ select p $$;";
    expect(functionList({ "f_one.sql": ok }).map((f) => f.name)).toEqual(["f_one"]);
    expect(() => functionList({ "f_two.sql": ok })).toThrow("f_two.sql must define exactly one function");
    expect(() => functionList({ "f_one.sql": ok.replace("or replace ", "") })).toThrow("must define exactly one");
    expect(() => functionList({ "f_one.sql": `${ok}\n${ok.replace("f_one", "f_three")}` })).toThrow(
      "must define exactly one",
    );
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
      migrate(sql, "entitlement", entitlementSchema),
      migrate(sql, "entitlement", entitlementSchema),
      migrate(sql, "notification", notificationSchema),
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
      "entitlement.schema_functions",
      "entitlement.schema_migrations",
      "notification.notification_dlq",
      "notification.notification_nats_dlq",
      "notification.notification_requests",
      "notification.notification_user_seqs",
      "notification.notifications",
      "notification.player_devices",
      "notification.player_preferences",
      "notification.player_stream_tickets",
      "notification.processed_events",
      "notification.push_deliveries",
      "notification.schema_functions",
      "notification.schema_migrations",
      "notification.webhook_attempts",
      "notification.webhook_deliveries",
      "notification.webhook_endpoints",
    ]);
    expect(await migrate(sql, "entitlement", entitlementSchema)).toEqual([]);
  });

  test("a current schema is recognised without the migration lock (a start does not wait for a migrating replica)", async () => {
    await migrate(sql, "entitlement", entitlementSchema);
    const holder = await sql.reserve();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await holder`select pg_advisory_lock(${sha256Int64("migrate:entitlement").toString()}::bigint)`;
      const applied = await Promise.race([
        migrate(sql, "entitlement", entitlementSchema),
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
    await migrate(sql, "entitlement", entitlementSchema);
    const next = entitlementMigrations.length + 1;
    const withPreparation = {
      functions: entitlementFunctions,
      migrations: [
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
      ],
    };
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
    const broken = {
      functions: entitlementFunctions,
      migrations: [
        ...entitlementMigrations,
        { version: entitlementMigrations.length + 1, name: "x.sql", sql: "create table half (id int); select 1/0;" },
      ],
    };
    await expect(migrate(sql, "entitlement", broken)).rejects.toThrow();
    const [row] = await sql`select to_regclass('entitlement.half') as t`;
    expect(row?.t).toBeNull();
  });

  test("functions follow the migrations: a changed text is applied again, a replica older than the schema applies none", async () => {
    await migrate(sql, "entitlement", entitlementSchema);
    const withProbe = (text: string, migrations = entitlementMigrations) => ({
      migrations,
      functions: [
        ...entitlementFunctions,
        ...functionList({
          "migrate_probe.sql": `create or replace function migrate_probe() returns text language sql as $$ select '${text}' $$;`,
        }),
      ],
    });
    const probe = async () => (await sql`select entitlement.migrate_probe() as t`)[0]?.t;
    expect(await migrate(sql, "entitlement", withProbe("one")), "no migration applied").toEqual([]);
    expect(await probe(), "a new function is applied without a migration").toBe("one");
    await migrate(sql, "entitlement", withProbe("two"));
    expect(await probe(), "a changed text is applied again").toBe("two");
    const newer = { version: entitlementMigrations.length + 1, name: "newer.sql", sql: "select 1" };
    await migrate(sql, "entitlement", withProbe("three", [...entitlementMigrations, newer]));
    expect(await probe()).toBe("three");
    await migrate(sql, "entitlement", withProbe("two"));
    expect(await probe(), "a replica that does not know every migration leaves the functions as they are").toBe(
      "three",
    );
    await sql`delete from entitlement.schema_migrations where version = ${newer.version}`;
    await migrate(sql, "entitlement", entitlementSchema);
    const [row] = await sql`select count(*)::int as n from entitlement.schema_functions where name = 'migrate_probe'`;
    expect(row?.n, "a function no longer listed is no longer recorded").toBe(0);
    await sql`drop function entitlement.migrate_probe()`;
  });
});
