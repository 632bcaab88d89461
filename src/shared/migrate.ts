// Forward-only migrations: numbered .sql files in db/<service>/, embedded into the executable through text imports,
// applied in one transaction under an advisory lock so that several replicas may start at once.
import { type Sql, SqlState } from "./db.ts";
import { sha256Int64 } from "./ids.ts";

export type Migration = { version: number; name: string; sql: string };

/** Builds the ordered migration list from `NNN_name.sql` file names; rejects gaps and duplicates. */
export function migrationList(files: Record<string, string>): Migration[] {
  const list = Object.entries(files).map(([file, text]) => {
    const match = /^(\d{3})_[a-z0-9_]+\.sql$/.exec(file);
    if (!match) throw new Error(`migration file name must look like 001_name.sql: ${file}`);
    return { version: Number(match[1]), name: file, sql: text };
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
export async function migrate(sql: Sql, schema: string, migrations: Migration[]): Promise<string[]> {
  if (await isCurrent(sql, schema, migrations)) return [];
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

/** True when every migration is recorded as applied; false also when the schema or its table does not exist yet. */
async function isCurrent(sql: Sql, schema: string, migrations: Migration[]): Promise<boolean> {
  try {
    const rows = await sql<{ version: number }[]>`select version from ${sql(schema)}.schema_migrations`;
    const applied = new Set(rows.map((r) => r.version));
    return migrations.every((m) => applied.has(m.version));
  } catch (error) {
    if ((error as { code?: string }).code === SqlState.undefinedTable) return false;
    throw error;
  }
}
