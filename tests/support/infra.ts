// Real PostgreSQL and NATS for integration tests, from the backend the preload chose for this run (backend.ts: the
// URLs when given, else Testcontainers, local servers or the machine's binaries). Each test file gets its own
// database, cloned from a template that holds every migration, and its own stream names.
import postgres from "postgres";
import { SCHEMA as ENTITLEMENT, schemaText as entitlementSchema } from "../../src/entitlement/migrations.ts";
import { SCHEMA as NOTIFICATION, schemaText as notificationSchema } from "../../src/notification/migrations.ts";
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

function templateName(): string {
  const all = [entitlementSchema, notificationSchema]
    .flatMap((s) => [...s.migrations, ...s.functions])
    .map((m) => m.sql)
    .join("\n--\n");
  return `tpl_${new Bun.CryptoHasher("sha256").update(all).digest("hex").slice(0, 16)}`;
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
    const template = migrated ? `template "${await ensureTemplate(admin, base)}"` : "";
    const name = uniqueName(`test_${label}`).slice(0, 63);
    await admin.unsafe(`create database "${name}" ${template}`);
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
