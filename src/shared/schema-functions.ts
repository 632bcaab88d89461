// SQL functions kept one per file (db/<service>/functions/<name>.sql, each a `create or replace function <name>`),
// embedded like the migrations and applied after them, under the same lock, whenever their text differs from what
// the schema last received: a change to a function is a diff of its file, never a copy in a new migration.
// Tables, indexes, grants and the drop of a function the previous release still calls belong to numbered migrations.
import { type Db, type Sql, SqlState } from "./db.ts";

export type SqlFunction = { name: string; sql: string; digest: string };

const DEFINITION = /create\s+or\s+replace\s+function\s+([a-z0-9_]+)\s*\(/gi;

/**
 * Builds the function list from `<name>.sql` files, in file-name order; rejects a file that does not define exactly
 * one function named as the file, or that defines it without `or replace` (it must be safe to apply again).
 */
export function functionList(files: Record<string, string>): SqlFunction[] {
  return Object.entries(files)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([file, text]) => {
      const match = /^([a-z0-9_]+)\.sql$/.exec(file);
      if (!match?.[1]) throw new Error(`function file name must look like name.sql: ${file}`);
      const names = [...text.matchAll(DEFINITION)].map((m) => m[1]?.toLowerCase());
      const plain = (text.match(/create\s+function/gi) ?? []).length;
      if (names.length !== 1 || names[0] !== match[1] || plain > 0) {
        throw new Error(`${file} must define exactly one function, ${match[1]}, with create or replace`);
      }
      return { name: match[1], sql: text, digest: new Bun.CryptoHasher("sha256").update(text).digest("hex") };
    });
}

/** The digests the schema last received, by function name; none when the table does not exist yet. */
export async function appliedDigests(sql: Sql, schema: string): Promise<Map<string, string>> {
  try {
    const rows = await sql<{ name: string; digest: string }[]>`
      select name, digest from ${sql(schema)}.schema_functions`;
    return new Map(rows.map((r) => [r.name, r.digest]));
  } catch (error) {
    if ((error as { code?: string }).code === SqlState.undefinedTable) return new Map();
    throw error;
  }
}

/**
 * Creates, when missing, a table that records what a schema has applied: `columns` (the key first) and applied_at.
 * Both arguments are constants of this code, never input.
 */
export async function createLedger(tx: Db, table: string, columns: string): Promise<void> {
  await tx.unsafe(`create table if not exists ${table} (${columns}, applied_at timestamptz not null default now())`);
}

export const differs = (functions: SqlFunction[], applied: Map<string, string>): boolean =>
  functions.length !== applied.size || functions.some((f) => applied.get(f.name) !== f.digest);

/**
 * Applies every function, inside the migration's transaction (search_path already the schema), and records their
 * digests; returns the names whose text changed.
 */
export async function applyFunctions(tx: Db, functions: SqlFunction[]): Promise<string[]> {
  await createLedger(tx, "schema_functions", "name text primary key, digest text not null");
  const before = new Map(
    (await tx<{ name: string; digest: string }[]>`select name, digest from schema_functions`).map((r) => [
      r.name,
      r.digest,
    ]),
  );
  // Twice: first without checking bodies, so that each function exists whatever the files' order; then with the
  // check, so that a body naming what does not exist fails the migration instead of a later call.
  await tx`set local check_function_bodies = off`;
  for (const f of functions) await tx.unsafe(f.sql);
  await tx`set local check_function_bodies = on`;
  for (const f of functions) await tx.unsafe(f.sql);
  await tx`delete from schema_functions where not (name = any(${functions.map((f) => f.name)}::text[]))`;
  await tx`
    insert into schema_functions (name, digest)
    select * from unnest(${functions.map((f) => f.name)}::text[], ${functions.map((f) => f.digest)}::text[])
    on conflict (name) do update set digest = excluded.digest, applied_at = now()
    where schema_functions.digest <> excluded.digest`;
  return functions.filter((f) => before.get(f.name) !== f.digest).map((f) => f.name);
}
