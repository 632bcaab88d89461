// Least privilege in PostgreSQL, both services at once (docs/security.md "PostgreSQL roles", ADR-23). A fresh
// database gets the DBA's statements from the document; each service migrates as its schema's owner (a plain login
// role, no CREATEROLE) through DATABASE_MIGRATION_URL and serves with a runtime login role that is only a member of
// its group role. A grant becomes a SENT notification; neither runtime role can run DDL or touch the other's schema;
// a table a later migration adds serves the runtime role with no new GRANT.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { schemaText as entitlementSchema } from "../../src/entitlement/migrations.ts";
import { analyzeOutbox } from "../../src/entitlement/work/outbox/queries.ts";
import { schemaText as notificationSchema } from "../../src/notification/migrations.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { postGrant, waitReady, waitSent } from "../support/grant-flow.ts";
import { natsUrl, postgresAdminUrl, uniqueName } from "../support/infra.ts";
import { deletePipelineStreams, pipelineNatsNames } from "../support/nats-names.ts";
import { type ServedProcess, serve as startServe } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";
import { dbaStatements, rolesFor, SERVICES, type Service, sqlstate, TABLES } from "./runtime-roles.helpers.ts";

setDefaultTimeout(120_000);

const MAIN: Record<Service, string> = {
  entitlement: new URL("../../src/entitlement/main.ts", import.meta.url).pathname,
  notification: new URL("../../src/notification/main.ts", import.meta.url).pathname,
};
const MIGRATIONS = { entitlement: entitlementSchema, notification: notificationSchema };
const database = uniqueName("test_roles");
const roles = rolesFor(database.slice("test_roles_".length));
const stream = uniqueName("roles").replaceAll("_", "-");
let admin: postgres.Sql;
let sql: postgres.Sql;
const served: ServedProcess[] = [];

/** The URL of the test database for `role` (the shared cluster trusts local connections: no password). */
const urlAs = async (role?: string) => {
  const url = new URL(await postgresAdminUrl());
  url.pathname = `/${database}`;
  if (role) [url.username, url.password] = [role, ""];
  return url.toString();
};

beforeAll(async () => {
  admin = postgres(await postgresAdminUrl(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${database}"`);
  for (const statement of dbaStatements(roles, database)) {
    const once = /^create role \w+_runtime nologin$/.test(statement); // once per cluster: another test may have run it
    const code = await sqlstate(admin.unsafe(statement));
    if (code !== "succeeded" && !(once && code === "42710")) throw new Error(`${statement}: ${code}`);
  }
  sql = postgres(await urlAs(), { max: 2, onnotice: () => {} });
});

afterAll(async () => {
  for (const s of served) s.child.kill("SIGKILL");
  await sql?.end();
  await admin.unsafe(`drop database if exists "${database}" with (force)`);
  for (const service of SERVICES)
    for (const role of Object.values(roles[service])) await admin.unsafe(`drop role if exists "${role}"`);
  await admin.end();
  await deletePipelineStreams(await natsUrl(), stream);
});

/** Migrates both schemas as their owners, as serve does first with DATABASE_MIGRATION_URL (a no-op once it has). */
async function migrateAsOwners(): Promise<void> {
  for (const service of SERVICES) {
    const owner = postgres(await urlAs(roles[service].owner), { max: 1, onnotice: () => {} });
    try {
      await migrate(owner, service, MIGRATIONS[service]);
    } finally {
      await owner.end();
    }
  }
}

async function serve(service: Service, env: Record<string, string>): Promise<string> {
  const s = startServe(MAIN[service], service, {
    DATABASE_URL: await urlAs(roles[service].app),
    DATABASE_MIGRATION_URL: await urlAs(roles[service].owner),
    NATS_URL: await natsUrl(),
    ...env,
  });
  served.push(s);
  const base = `http://127.0.0.1:${await s.port}`;
  await waitReady(base, "readyz");
  return base;
}

test("each service migrates as its owner and serves with its runtime role: a grant becomes a SENT notification", async () => {
  const names = pipelineNatsNames(stream, uniqueName("roles").replaceAll("_", "-"));
  const entitlement = await serve("entitlement", { ...names, ENTITLEMENT_AUTH_DISABLED: "true" });
  await serve("notification", names);

  const grant = await postGrant(entitlement, { user: "roles-user", sku: "sku", key: "roles-1" });
  expect(grant.status, "the runtime role's DML is enough to serve a grant").toBe(200);
  await waitSent(sql, "roles-user", "the notification to be SENT");
  const sessions = await sql`
    select application_name as service, string_agg(distinct usename, ',') as role from pg_stat_activity
    where datname = current_database() and application_name in ('entitlement', 'notification')
    group by 1 order by 1`;
  expect([...sessions], "each pool's connections belong to its runtime role").toEqual(
    SERVICES.map((service) => ({ service, role: roles[service].app })),
  );
  const owners = await sql`
    select nspname as service, nspowner::regrole::text as role from pg_namespace
    where nspname in ('entitlement', 'notification') order by 1`;
  expect([...owners], "each schema belongs to the owner that migrated it").toEqual(
    SERVICES.map((service) => ({ service, role: roles[service].owner })),
  );
  for (const s of served) s.child.kill("SIGTERM");
  for (const s of served) expect(await s.child.exited, "drains and exits 0").toBe(0);
});

test("entitlement's runtime role refreshes outbox_events' planner statistics, as the relay does after a slow claim", async () => {
  const analyzed = async () => {
    const [row] = await sql`
      select analyze_count::int as n from pg_stat_user_tables where relid = 'entitlement.outbox_events'::regclass`;
    return row?.n ?? 0;
  };
  await migrateAsOwners();
  const before = await analyzed();
  const runtime = postgres(await urlAs(roles.entitlement.app), {
    max: 1,
    onnotice: () => {},
    connection: { search_path: "entitlement" },
  });
  try {
    await analyzeOutbox(runtime);
  } finally {
    await runtime.end(); // a session's statistics are reported at its end at the latest
  }
  await waitUntil(async () => (await analyzed()) > before, "outbox_events to be analyzed (ANALYZE is the owner's)");
});

describe.each(SERVICES)("%s's runtime role", (service) => {
  const { own, other } = TABLES[service];
  beforeAll(migrateAsOwners);
  const asRuntime = async <T>(run: (db: postgres.Sql) => Promise<T>) => {
    const db = postgres(await urlAs(roles[service].app), { max: 1, onnotice: () => {} });
    try {
      return await run(db);
    } finally {
      await db.end();
    }
  };

  test("can run no DDL and can neither read nor change the other service's schema", async () => {
    const codes = await asRuntime(async (db) => {
      const statements = {
        own: `select 1 from ${own} limit 1`,
        "create table": `create table ${service}.intruder (x int)`,
        "create table in public": "create table public.intruder (x int)",
        "create temporary table": "create temporary table intruder (x int)",
        "create schema": "create schema intruder",
        drop: `drop table ${own}`,
        alter: `alter table ${own} add column x int`,
        truncate: `truncate ${own}`,
        "write the migration history": `delete from ${service}.schema_migrations`,
        "read the other schema": `select 1 from ${other} limit 1`,
        "change the other schema": `delete from ${other}`,
      };
      const result: Record<string, string | undefined> = {};
      for (const [what, statement] of Object.entries(statements)) result[what] = await sqlstate(db.unsafe(statement));
      return result;
    });
    expect(codes, "DML on its own tables only: every other statement is 42501").toEqual({
      own: "succeeded",
      "create table": "42501",
      "create table in public": "42501",
      "create temporary table": "42501",
      "create schema": "42501",
      drop: "42501",
      alter: "42501",
      truncate: "42501",
      "write the migration history": "42501",
      "read the other schema": "42501",
      "change the other schema": "42501",
    });
  });

  test("uses a table and its sequence added by a later migration, with no new GRANT", async () => {
    const owner = postgres(await urlAs(roles[service].owner), { max: 1, onnotice: () => {} });
    const next = MIGRATIONS[service].migrations.length + 1;
    try {
      const later = {
        version: next,
        name: `${next}_later.sql`,
        sql: "create table later (id serial primary key, note text)",
      };
      expect(
        await migrate(owner, service, {
          ...MIGRATIONS[service],
          migrations: [...MIGRATIONS[service].migrations, later],
        }),
      ).toEqual([later.name]);
    } finally {
      await owner.end();
    }
    // Default privileges belong to the role that creates the table: one made by another role is not granted.
    await sql.unsafe(`create table ${service}.by_hand (x int)`);
    const result = await asRuntime(async (db) => ({
      insert: [...(await db.unsafe(`insert into ${service}.later (note) values ('a') returning id`))].map((r) => r.id),
      update: await sqlstate(db.unsafe(`update ${service}.later set note = 'b'`)),
      delete: await sqlstate(db.unsafe(`delete from ${service}.later`)),
      "by another role": await sqlstate(db.unsafe(`select 1 from ${service}.by_hand`)),
    }));
    expect(result, "the later migration's table and sequence are granted, the hand-made table is not").toEqual({
      insert: [1],
      update: "succeeded",
      delete: "succeeded",
      "by another role": "42501",
    });
  });
});
