// Reads of a schema for the upgrade tests: every row of every table, and what the catalog says the schema is made of.
import type { Sql } from "../../src/shared/db.ts";

/** Every row of every table of the schema (partitions through their parent), each table's rows in a stable order. */
export async function everyRow(sql: Sql, schema: string): Promise<Record<string, unknown[]>> {
  const tables = await sql<{ name: string }[]>`
    select c.relname as name from pg_class c
    where c.relnamespace = ${schema}::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
      and c.relname not in ('schema_migrations', 'schema_functions')
    order by 1`;
  const rows: Record<string, unknown[]> = {};
  for (const { name } of tables) {
    const [row] = await sql<{ rows: unknown[] }[]>`
      select coalesce(jsonb_agg(to_jsonb(t) order by to_jsonb(t)::text), '[]') as rows from ${sql(schema)}.${sql(name)} t`;
    rows[name] = row?.rows ?? [];
  }
  return rows;
}

/** Each function of the schema as `name(arguments) result`, the signature a caller depends on. */
export async function functionSignatures(sql: Sql, schema: string): Promise<string[]> {
  const rows = await sql<{ signature: string }[]>`
    select p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || pg_get_function_result(p.oid)
           as signature
    from pg_proc p where p.pronamespace = ${schema}::regnamespace order by 1`;
  return rows.map((r) => r.signature);
}

/** Columns, constraints, indexes and function bodies of the schema: what two ways to one schema must agree on. */
export async function schemaShape(sql: Sql, schema: string): Promise<string[]> {
  const rows = await sql<{ line: string }[]>`
    select format('column %s.%s %s %s %s', c.table_name, c.column_name, c.data_type, c.is_nullable,
                  coalesce(c.column_default, '')) as line
    from information_schema.columns c where c.table_schema = ${schema}
    union all
    select format('constraint %s %s', t.relname, pg_get_constraintdef(k.oid))
    from pg_constraint k join pg_class t on t.oid = k.conrelid where t.relnamespace = ${schema}::regnamespace
    union all
    select format('index %s', i.indexdef) from pg_indexes i where i.schemaname = ${schema}
    union all
    select format('function %s(%s) %s %s', p.proname, pg_get_function_identity_arguments(p.oid),
                  pg_get_function_result(p.oid), md5(p.prosrc))
    from pg_proc p where p.pronamespace = ${schema}::regnamespace
    order by 1`;
  return rows.map((r) => r.line);
}

/** The columns of each table of the schema (partitions through their parent). */
export async function tableColumns(sql: Sql, schema: string): Promise<Record<string, string[]>> {
  const rows = await sql<{ name: string; columns: string[] }[]>`
    select c.table_name as name, array_agg(c.column_name::text order by c.ordinal_position) as columns
    from information_schema.columns c
    join pg_class t on t.relname = c.table_name and t.relnamespace = ${schema}::regnamespace
    where c.table_schema = ${schema} and t.relkind in ('r', 'p') and not t.relispartition
    group by c.table_name`;
  return Object.fromEntries(rows.map((r) => [r.name, r.columns]));
}

/** A call of a function by position and, when every argument has a name, by name: what its callers may send. */
export type FunctionCall = { signature: string; positional: string; named: string | null };

/** A call of each function of the schema (triggers aside), its arguments typed nulls. */
export async function functionCalls(sql: Sql, schema: string): Promise<FunctionCall[]> {
  const rows = await sql<
    { name: string; signature: string; types: string[]; names: string[] | null; modes: string[] | null }[]
  >`
    select p.proname as name,
           p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' as signature,
           array(select format_type(p.proargtypes[i], null) from generate_series(0, p.pronargs - 1) i order by i) as types,
           p.proargnames as names, p.proargmodes::text[] as modes
    from pg_proc p
    where p.pronamespace = ${schema}::regnamespace and p.prokind = 'f' and p.prorettype <> 'trigger'::regtype
    order by 2`;
  return rows.map((r) => {
    const names = (r.names ?? []).filter((_, i) => !r.modes || ["i", "b", "v"].includes(r.modes[i] as string));
    const typed = r.types.map((type) => `null::${type}`);
    const named = names.length === typed.length && names.every((n) => n !== "");
    return {
      signature: r.signature,
      positional: `select * from ${r.name}(${typed.join(", ")})`,
      named: named ? `select * from ${r.name}(${typed.map((v, i) => `${names[i]} => ${v}`).join(", ")})` : null,
    };
  });
}

/** What each call resolves to without running it: the columns it returns (name and type), or the error it gets. */
export async function resolveCalls(sql: Sql, calls: FunctionCall[]): Promise<Record<string, string>> {
  const resolved: Record<string, string> = {};
  const describe = async (text: string): Promise<string> => {
    try {
      const { columns } = await sql.unsafe(text).describe();
      return columns.map((c) => `${c.name} ${c.type}`).join(", ");
    } catch (error) {
      return `error ${(error as { code?: string }).code}: ${(error as Error).message}`;
    }
  };
  for (const call of calls) {
    resolved[`${call.signature} by position`] = await describe(call.positional);
    if (call.named) resolved[`${call.signature} by name`] = await describe(call.named);
  }
  return resolved;
}
