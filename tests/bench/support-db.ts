// The database of the support benches (audit-search.ts, bulk-apply.ts): by default a PostgreSQL cluster of the bench's
// own (own-cluster.ts), so that filling millions of rows never loads the machine's shared server; with `--url URL` a
// fresh database on that server instead, dropped at the end. Either way migrated to Entitlement's schema.
import postgres from "postgres";
import { SCHEMA, schemaText } from "../../src/entitlement/migrations.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { startOwnPostgres } from "./own-cluster.ts";

export type BenchDatabase = { url: string; stop: () => Promise<void> };

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function openBenchDatabase(url: string | undefined, label: string): Promise<BenchDatabase> {
  let db: BenchDatabase;
  if (url) {
    const name = `bench_${label}_${Date.now().toString(36)}`;
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}"`);
    db = {
      url: withDatabase(url, name),
      stop: async () => {
        await admin.unsafe(`drop database if exists "${name}" with (force)`);
        await admin.end();
      },
    };
  } else {
    const own = await startOwnPostgres();
    db = { url: own.url, stop: async () => own.stop() };
  }
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    await migrate(sql, SCHEMA, schemaText);
  } finally {
    await sql.end();
  }
  return db;
}
