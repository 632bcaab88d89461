// Forward-only migrations: numbered .sql files in db/<service>/, embedded into the executable through text imports,
// applied in one transaction under an advisory lock so that several replicas may start at once. A migration may have a
// preparation (db/<service>/prepare/<same name>): work that must not run under the migration's locks, such as
// proving a large table's rows in bounds while writers go on. It runs first, outside that transaction, one part per
// transaction (parts are separated by a line `-- next transaction`), and must be safe to run again.
import { type Sql, SqlState } from "./db.ts";
import { sha256Int64 } from "./ids.ts";

export type Migration = { version: number; name: string; sql: string; prepare?: string[] };

/** What a long preparation says while it runs (the service's logger fits). */
export type MigrationLog = { info: (fields: Record<string, unknown>, message: string) => void };

const PART_SEPARATOR = /^-- next transaction$/m;

/**
 * Builds the ordered migration list from `NNN_name.sql` file names; rejects gaps and duplicates. `prepare` maps a
 * migration's file name to its preparation's text.
 */
export function migrationList(files: Record<string, string>, prepare: Record<string, string> = {}): Migration[] {
  for (const file of Object.keys(prepare)) {
    if (!(file in files)) throw new Error(`a preparation without its migration: ${file}`);
  }
  const list = Object.entries(files).map(([file, text]) => {
    const match = /^(\d{3})_[a-z0-9_]+\.sql$/.exec(file);
    if (!match) throw new Error(`migration file name must look like 001_name.sql: ${file}`);
    const parts = prepare[file]?.split(PART_SEPARATOR).filter((part) => part.trim() !== "");
    return { version: Number(match[1]), name: file, sql: text, ...(parts ? { prepare: parts } : {}) };
  });
  list.sort((a, b) => a.version - b.version);
  list.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migrations must be numbered 1..n without gaps: ${m.name}`);
  });
  return list;
}

/** Stable 64-bit advisory-lock key per schema, so two services migrating one database do not wait for each other. */
const lockKey = (schema: string): bigint => sha256Int64(`migrate:${schema}`);

/**
 * Applies pending migrations; returns the names applied (empty when the schema is current). A current schema (every
 * start but the first after an upgrade) is recognised by one read, without the transaction and the lock: five
 * statements fewer between exec and /readyz.
 */
export async function migrate(
  sql: Sql,
  schema: string,
  migrations: Migration[],
  log?: MigrationLog,
): Promise<string[]> {
  const applied = await appliedVersions(sql, schema);
  if (migrations.every((m) => applied.has(m.version))) return [];
  await prepare(
    sql,
    schema,
    migrations.filter((m) => m.prepare && !applied.has(m.version)),
    log,
  );
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${lockKey(schema).toString()}::bigint)`;
    await tx`create schema if not exists ${tx(schema)}`;
    await tx`set local search_path to ${tx(schema)}`;
    await tx`
      create table if not exists schema_migrations (
        version int primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`;
    const rows = await tx<{ version: number }[]>`select version from schema_migrations`;
    const applied = new Set(rows.map((r) => r.version));
    const done: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      done.push(m.name);
    }
    return done;
  });
}

/** The versions recorded as applied; none when the schema or its table does not exist yet. */
async function appliedVersions(sql: Sql, schema: string): Promise<Set<number>> {
  try {
    const rows = await sql<{ version: number }[]>`select version from ${sql(schema)}.schema_migrations`;
    return new Set(rows.map((r) => r.version));
  } catch (error) {
    if ((error as { code?: string }).code === SqlState.undefinedTable) return new Set();
    throw error;
  }
}

/**
 * Runs the preparations of pending migrations on one connection, each part in its own transaction, under a session
 * advisory lock (the migration key: two replicas prepare one after the other, and the second finds the work done).
 */
async function prepare(sql: Sql, schema: string, pending: Migration[], log?: MigrationLog): Promise<void> {
  if (pending.length === 0) return;
  const conn = await sql.reserve();
  try {
    await conn`select pg_advisory_lock(${lockKey(schema).toString()}::bigint)`;
    await conn`select set_config('search_path', ${schema}, false)`;
    for (const m of pending) {
      for (const [i, part] of (m.prepare ?? []).entries()) {
        const started = performance.now();
        log?.info({ migration: m.name, part: i + 1, of: m.prepare?.length }, "migration preparation running");
        await conn.unsafe(part);
        const ms = Math.round(performance.now() - started);
        log?.info({ migration: m.name, part: i + 1, ms }, "migration preparation done");
      }
    }
  } finally {
    await conn`select pg_advisory_unlock_all()`.catch(() => {});
    await conn`reset search_path`.catch(() => {});
    conn.release();
  }
}
