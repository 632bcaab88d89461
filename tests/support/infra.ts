// Real PostgreSQL and NATS for integration tests, from the backend the preload chose for this run (backend.ts: the
// URLs when given, else Testcontainers, local servers or the machine's binaries). Each test file gets its own
// database, cloned from a template that holds every migration (createTestDatabase, and the fixtures built on it:
// openTestDatabase, useTestDatabase), and its own stream names; resetService empties one service's tables between
// tests by the schema's own list (docs/testing.md).
import { afterAll, beforeAll, beforeEach } from "bun:test";
import postgres from "postgres";
import { SCHEMA as ENTITLEMENT, schemaText as entitlementSchema } from "../../src/entitlement/migrations.ts";
import { SCHEMA as NOTIFICATION, schemaText as notificationSchema } from "../../src/notification/migrations.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { migrate } from "../../src/shared/migrate.ts";

function required(name: "DATABASE_URL" | "NATS_URL"): Promise<string> {
  const url = process.env[name];
  if (url) return Promise.resolve(url);
  return Promise.reject(new Error(`${name} is not set: run under \`bun test\` (its preload provides it) or set it`));
}

/** The PostgreSQL every test file shares (the test backend sets DATABASE_URL before any file runs). */
export function postgresAdminUrl(): Promise<string> {
  return required("DATABASE_URL");
}

/** The NATS every test file shares (the test backend sets NATS_URL before any file runs). */
export function natsUrl(): Promise<string> {
  return required("NATS_URL");
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** A name unique to this run, safe for databases, streams and consumers. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`.toLowerCase();
}

/** The services' schemas: what a reset of one service empties. */
export const SERVICE_SCHEMAS = { entitlement: ENTITLEMENT, notification: NOTIFICATION } as const;
export type ServiceName = keyof typeof SERVICE_SCHEMAS;

// The version of what the template holds besides the migrations (the comment naming its seeded tables): a change here
// builds a new template instead of reusing one an older checkout left on the server.
const TEMPLATE_FORMAT = "seeded-tables-comment";

function templateName(): string {
  const texts = [entitlementSchema, notificationSchema].flatMap((s) => [...s.migrations, ...s.functions]);
  const all = [TEMPLATE_FORMAT, ...texts.map((m) => m.sql)];
  return `tpl_${new Bun.CryptoHasher("sha256").update(all.join("\n--\n")).digest("hex").slice(0, 16)}`;
}

type Seeded = Record<string, string[]>;

/** The tables of each service schema that hold rows once every migration ran (the migration ledger, any seed data). */
async function seededTables(sql: postgres.Sql): Promise<Seeded> {
  const seeded: Seeded = {};
  for (const schema of Object.values(SERVICE_SCHEMAS)) {
    const tables = await sql<{ name: string }[]>`
      select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relkind in ('r', 'p') and not c.relispartition`;
    seeded[schema] = [];
    for (const { name } of tables) {
      const [row] = await sql`select exists (select from ${sql(schema)}.${sql(name)}) as filled`;
      if (row?.filled) seeded[schema].push(name);
    }
  }
  return seeded;
}

/** The seeded tables travel as the database's comment: a reset reads them from the clone it empties. */
async function commentSeeded(admin: postgres.Sql, database: string, seeded: string): Promise<void> {
  await admin.unsafe(`comment on database "${database}" is '${seeded.replaceAll("'", "''")}'`);
}

async function ensureTemplate(admin: postgres.Sql, base: string): Promise<string> {
  const name = templateName();
  await admin`select pg_advisory_lock(7261526)`;
  try {
    const [found] = await admin`select 1 from pg_database where datname = ${name}`;
    if (found) return name;
    const building = `${name}_build`;
    await admin.unsafe(`drop database if exists "${building}" with (force)`);
    await admin.unsafe(`create database "${building}"`);
    const sql = postgres(withDatabase(base, building), { max: 1, onnotice: () => {} });
    try {
      await migrate(sql, ENTITLEMENT, entitlementSchema);
      await migrate(sql, NOTIFICATION, notificationSchema);
      await commentSeeded(admin, building, JSON.stringify(await seededTables(sql)));
    } finally {
      await sql.end();
    }
    await admin.unsafe(`alter database "${building}" rename to "${name}"`);
    return name;
  } finally {
    await admin`select pg_advisory_unlock(7261526)`;
  }
}

export type TestDatabase = { url: string; name: string; drop: () => Promise<void> };

/** A fresh, fully migrated database for one test file. Call `drop()` in afterAll. */
export function createTestDatabase(label = "t"): Promise<TestDatabase> {
  return createDatabase(label, true);
}

/** A fresh database without any schema, for a test that migrates it itself (an upgrade). Call `drop()` in afterAll. */
export function createEmptyTestDatabase(label = "t"): Promise<TestDatabase> {
  return createDatabase(label, false);
}

async function createDatabase(label: string, migrated: boolean): Promise<TestDatabase> {
  const base = await postgresAdminUrl();
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  try {
    const name = uniqueName(`test_${label}`).slice(0, 63);
    if (!migrated) {
      await admin.unsafe(`create database "${name}"`);
    } else {
      const template = await ensureTemplate(admin, base);
      await admin.unsafe(`create database "${name}" template "${template}"`);
      const [seeded] = await admin<{ text: string }[]>`
        select shobj_description(oid, 'pg_database') as text from pg_database where datname = ${template}`;
      await commentSeeded(admin, name, seeded?.text ?? "{}");
    }
    return {
      name,
      url: withDatabase(base, name),
      drop: async () => {
        const a = postgres(base, { max: 1, onnotice: () => {} });
        try {
          await a.unsafe(`drop database if exists "${name}" with (force)`);
        } finally {
          await a.end();
        }
      },
    };
  } finally {
    await admin.end();
  }
}

/**
 * Empties every table of one service's schema back to the state of a fresh clone: each table that holds rows, except
 * those the migrations fill (the migration ledger, seed data), which the clone's comment names. The tables come from
 * the catalogue (a partitioned table once, its partitions with it), so a new table is reset without a test naming it.
 * Only tables that hold rows are truncated: a truncate of an empty table still rewrites its files.
 */
export async function resetService(sql: postgres.Sql, service: ServiceName): Promise<void> {
  const schema = SERVICE_SCHEMAS[service];
  const [comment] = await sql<{ text: string | null }[]>`
    select shobj_description(oid, 'pg_database') as text from pg_database where datname = current_database()`;
  if (!comment?.text) throw new Error("resetService empties only a database made by createTestDatabase");
  const kept = (JSON.parse(comment.text) as Record<string, string[]>)[schema] ?? [];
  const tables = await sql<{ name: string }[]>`
    select format('%I.%I', n.nspname, c.relname) as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relkind in ('r', 'p') and not c.relispartition and c.relname <> all(${kept})`;
  if (tables.length === 0) return;
  const probes = tables.map(({ name }) => sql`select ${name}::text as name where exists (select from ${sql(name)})`);
  const filled = await sql<{ name: string }[]>`${probes.reduce((all, probe) => sql`${all} union all ${probe}`)}`;
  // cascade: an empty table that references a filled one by a foreign key would otherwise refuse the truncate.
  if (filled.length > 0) await sql`truncate ${sql(filled.map((t) => t.name))} cascade`;
}

export const resetEntitlement = (sql: postgres.Sql) => resetService(sql, "entitlement");
export const resetNotification = (sql: postgres.Sql) => resetService(sql, "notification");

export type DatabaseFixture = {
  db: TestDatabase;
  /** A pool in the service's schema. */
  sql: Sql;
  /** Empties the service's tables (resetService). */
  reset: () => Promise<void>;
  /** Ends the pool and drops the database. */
  close: () => Promise<void>;
};

type DatabaseOptions = { service: ServiceName; poolMax?: number };

/** A clone of the migrated template with a pool in `service`'s schema: what every database fixture builds on. */
export async function openTestDatabase(label: string, options: DatabaseOptions): Promise<DatabaseFixture> {
  const db = await createTestDatabase(label);
  const schema = SERVICE_SCHEMAS[options.service];
  const sql = createSql({ url: db.url, schema, max: options.poolMax ?? 10, applicationName: `test-${label}` });
  return {
    db,
    sql,
    reset: () => resetService(sql, options.service),
    close: async () => {
      await sql.end({ timeout: 5 });
      await db.drop();
    },
  };
}

/** A pool in `service`'s schema whose every connect fails: nothing listens on 127.0.0.1:9 (an outage). */
export function unreachableDatabase(service: ServiceName, max = 1): Sql {
  return createSql({
    url: "postgres://postgres@127.0.0.1:9/none",
    schema: SERVICE_SCHEMAS[service],
    max,
    applicationName: "t",
  });
}

// The first file after a migration changed builds the template (every migration and function) before its clone.
const TEMPLATE_BUILD_MS = 60_000;

/**
 * The database of one test file, as hooks: openTestDatabase before the file's tests, closed after them; with
 * `resetEach`, the service's tables are emptied before each test. Read `f.sql` and `f.db` inside tests and hooks:
 * they are set once the file's tests start.
 */
export function useTestDatabase(label: string, options: DatabaseOptions & { resetEach?: boolean }): DatabaseFixture {
  const f = {} as DatabaseFixture;
  beforeAll(async () => {
    Object.assign(f, await openTestDatabase(label, options));
  }, TEMPLATE_BUILD_MS);
  afterAll(async () => {
    await f.close?.();
  }, 30_000);
  if (options.resetEach) beforeEach(() => f.reset());
  return f;
}
