// How long the migration that partitions the history keeps an existing deployment's writers waiting: a scratch
// database migrated up to the migration before it, N audit rows (and N/10 ledger and point-audit rows) written with
// generate_series, then the migration applied while another session inserts an audit row every 20 ms. The longest
// insert is the time the writers were locked out; the migration's own duration is printed beside it. Then the p99
// of the history of one item on the converted table (all N rows in the partition of the rows from before), and its
// EXPLAIN.
//   bun run tests/bench/partition-lock.ts [--rows 10000000] [--no-prepare]   (DATABASE_URL's server; the database is dropped after)
import { parseArgs } from "node:util";
import postgres from "postgres";
import { listAuditOfEntitlement } from "../../src/entitlement/features/history/queries.ts";
import { migrations } from "../../src/entitlement/migrations.ts";
import { migrate } from "../../src/shared/migrate.ts";

const PARTITIONING = "011_history_partitions.sql";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  // --no-prepare: the migration without its preparation (the validating scan under the migration's lock), to compare.
  options: { rows: { type: "string", default: "10000000" }, "no-prepare": { type: "boolean", default: false } },
});
const rows = Number(values.rows);
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = `bench_partition_lock_${Date.now().toString(36)}`;
const url = new URL(adminUrl);
url.pathname = `/${database}`;
const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(2);

/** Audit rows spread over the last year, shaped like the service's (ids, trace ids, a detail document). */
async function populate(sql: postgres.Sql, n: number): Promise<void> {
  const chunk = 1_000_000;
  for (let from = 0; from < n; from += chunk) {
    const to = Math.min(n, from + chunk) - 1;
    await sql`
      insert into entitlement.entitlement_audit
        (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, source, source_id, request_id, caller,
         detail, trace_id)
      select gen_random_uuid(), now() - (i::float8 / ${n}) * interval '365 days', 'user-' || (i % 1000000),
             'sku-' || (i % 50), 'GRANT', i % 5, 'purchase', 'p-' || i, gen_random_uuid()::text, 'shop',
             jsonb_build_object('reason', 'purchase', 'purchase_id', 'p-' || i), md5(i::text)
      from generate_series(${from}::bigint, ${to}::bigint) as i`;
  }
  const ledger = Math.max(1, Math.floor(n / 10));
  await sql`
    insert into entitlement.point_transactions (transaction_id, reservation_id, user_id, point_amount, reason, created_at)
    select gen_random_uuid(), gen_random_uuid(), 'user-' || (i % 1000000), 10, 'match', now() - (i::float8 / ${ledger}) * interval '365 days'
    from generate_series(1, ${ledger}) as i`;
  await sql`
    insert into entitlement.point_audit (audit_id, occurred_at, reservation_id, user_id, action)
    select gen_random_uuid(), now() - (i::float8 / ${ledger}) * interval '365 days', gen_random_uuid(),
           'user-' || (i % 1000000), 'EXECUTE'
    from generate_series(1, ${ledger}) as i`;
}

/** Inserts an audit row every 20 ms until stopped; returns the latencies in ms. */
function probeWriters(sql: postgres.Sql): { stop: () => Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      await sql`
        insert into entitlement.entitlement_audit (audit_id, user_id, stock_keeping_unit, action)
        values (gen_random_uuid(), 'probe', 'sku', 'GRANT')`;
      latencies.push(performance.now() - t);
      await Bun.sleep(20);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return latencies;
    },
  };
}

/** p50 and p99 of the history of a random item (10 changes each), after a warm-up; and the plan of one. */
async function measureHistory(sql: postgres.Sql, n: number): Promise<void> {
  const users = Math.min(n, 1_000_000);
  const once = () => {
    const u = Math.floor(Math.random() * users);
    return listAuditOfEntitlement(sql, { userId: `user-${u}`, sku: `sku-${u % 50}`, limit: 50 });
  };
  for (let i = 0; i < 200; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const t = performance.now();
    await once();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const q = (p: number) => (times[Math.floor(p * times.length)] ?? 0).toFixed(2);
  console.log(`history of one item after the migration: p50 ${q(0.5)} ms, p99 ${q(0.99)} ms (2000 reads)`);
  const plan = await sql.unsafe(`explain (analyze, buffers, costs off, timing off, summary off)
    select a.audit_id, a.action, a.version, a.occurred_at from entitlement.entitlement_audit a
    where a.user_id = 'user-7' and a.stock_keeping_unit = 'sku-7'
    order by coalesce(a.version, -1) desc, a.occurred_at desc, a.audit_id desc limit 50`);
  console.log(plan.map((r) => Object.values(r).join("")).join("\n"));
}

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`create database "${database}"`);
const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
const probe = postgres(url.toString(), { max: 1, onnotice: () => {} });
const history = postgres(url.toString(), { max: 1, onnotice: () => {}, connection: { search_path: "entitlement" } });
try {
  const before = migrations.findIndex((m) => m.name === PARTITIONING);
  await migrate(sql, "entitlement", { migrations: migrations.slice(0, before), functions: [] });
  let t = performance.now();
  await populate(sql, rows);
  await sql`vacuum analyze entitlement.entitlement_audit`;
  await sql`checkpoint`;
  const [size] = await sql<{ bytes: number }[]>`
    select pg_total_relation_size('entitlement.entitlement_audit')::float8 as bytes`;
  console.log(`populated ${rows} audit rows (${((size?.bytes ?? 0) / 1024 ** 3).toFixed(2)} GiB) in ${seconds(t)}s`);
  const writers = probeWriters(probe);
  await Bun.sleep(500);
  t = performance.now();
  // The preparation (the bound proved while writers go on) runs first, then the migration's transaction.
  const log = {
    info: (fields: Record<string, unknown>, message: string) => console.log(message, JSON.stringify(fields)),
  };
  const upTo = migrations
    .slice(0, before + 1)
    .map((m) => (values["no-prepare"] ? { version: m.version, name: m.name, sql: m.sql } : m));
  await migrate(sql, "entitlement", { migrations: upTo, functions: [] }, log);
  const migrationSeconds = seconds(t);
  await Bun.sleep(500);
  const latencies = await writers.stop();
  await sql`analyze entitlement.entitlement_audit`;
  await measureHistory(history, rows);
  const [count] = await sql<{ n: number }[]>`select count(*)::float8 as n from entitlement.entitlement_audit`;
  const longest = Math.max(...latencies);
  console.log(
    `migration ${migrationSeconds}s; longest blocked audit insert ${longest.toFixed(0)} ms ` +
      `(${latencies.length} inserts); rows after: ${count?.n}`,
  );
} finally {
  await Promise.all([sql.end(), probe.end(), history.end()]);
  await admin.unsafe(`drop database if exists "${database}" with (force)`);
  await admin.end();
}
