// Forward-only migrations: numbered .sql files in db/<service>/, embedded into the executable through text imports,
// applied in one transaction under an advisory lock so that several replicas may start at once. A migration may have a
// preparation (db/<service>/prepare/<same name>): work that must not run under the migration's locks, such as
// proving a large table's rows in bounds while writers go on. It runs first, outside that transaction, one part per
// transaction (parts are separated by a line `-- next transaction`), and must be safe to run again. The schema's SQL
// functions follow the migrations in the same transaction (schema-functions.ts).
import { type Db, type Sql, SqlState } from "./db.ts";
import { sha256Int64 } from "./ids.ts";
import { appliedDigests, applyFunctions, createLedger, differs, type SqlFunction } from "./schema-functions.ts";

export type Migration = { version: number; name: string; sql: string; prepare?: string[] };

/** What a service's schema is made of: its numbered migrations, then its functions (none for a partial schema). */
export type SchemaText = { migrations: Migration[]; functions: SqlFunction[] };

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
 * Applies pending migrations, then the functions when any migration was applied or any function's text changed;
 * returns the migrations' names applied (empty when the schema is current). A current schema (every start but the
 * first after an upgrade) is recognised by two reads, without the transaction and the lock. A replica older than the
 * schema (the database has a migration it does not know: a rolling upgrade is under way) changes nothing, so it
 * never puts back the previous release's functions.
 */
export async function migrate(sql: Sql, schema: string, text: SchemaText, log?: MigrationLog): Promise<string[]> {
  const { migrations, functions } = text;
  const [applied, digests] = await Promise.all([appliedVersions(sql, schema), appliedDigests(sql, schema)]);
  const pending = migrations.filter((m) => !applied.has(m.version));
  const ours = olderThan(migrations, applied) ? [] : functions;
  if (pending.length === 0 && (ours.length === 0 || !differs(ours, digests))) return [];
  await prepare(
    sql,
    schema,
    pending.filter((m) => m.prepare),
    log,
  );
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${lockKey(schema).toString()}::bigint)`;
    await tx`create schema if not exists ${tx(schema)}`;
    await tx`set local search_path to ${tx(schema)}`;
    const { done, applied } = await applyMigrations(tx, migrations);
    if (functions.length > 0 && !olderThan(migrations, applied)) {
      const changed = await applyFunctions(tx, functions);
      if (changed.length > 0) log?.info({ functions: changed }, "schema functions applied");
    }
    return done;
  });
}

/** True when the schema has a migration this list does not know: it was written by a newer release. */
const olderThan = (migrations: Migration[], applied: Set<number>): boolean => {
  const known = new Set(migrations.map((m) => m.version));
  return [...applied].some((v) => !known.has(v));
};

/** The migrations not yet recorded, in order, each recorded as it is applied (under the lock). */
async function applyMigrations(tx: Db, migrations: Migration[]): Promise<{ done: string[]; applied: Set<number> }> {
  await createLedger(tx, "schema_migrations", "version int primary key, name text not null");
  const rows = await tx<{ version: number }[]>`select version from schema_migrations`;
  const applied = new Set(rows.map((r) => r.version));
  const done: string[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    await tx.unsafe(m.sql);
    await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
    done.push(m.name);
  }
  return { done, applied };
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
