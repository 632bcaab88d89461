// Audit search at scale: fills entitlement_audit with `--rows` rows (default 10,000,000) spread over three months, then
// times the console's search (src/entitlement/features/audit/search.ts, the service's own query and its prepared statements)
// for each kind of filter and prints p50/p99 per kind and the EXPLAIN (ANALYZE, BUFFERS) of one search of each kind.
// Target: p99 at most 50 ms at 10 million rows.
//   bun tests/bench/audit-search.ts                     10 million rows on a cluster of its own
//   bun tests/bench/audit-search.ts --rows 20000        a first look
//   bun tests/bench/audit-search.ts --url postgres://…  on that server, in a database of its own (dropped after)
//   bun tests/bench/audit-search.ts --diagnose          also times each kind again under each plan_cache_mode and
//                                                       prints its slowest searches (which sample, which filter)
import { parseArgs } from "node:util";
import postgres from "postgres";
import type { AuditFilter } from "../../src/entitlement/features/audit/queries.ts";
import { searchAuditPage } from "../../src/entitlement/features/audit/search.ts";
import { SCHEMA } from "../../src/entitlement/migrations.ts";
import { round, summarize } from "./stats.ts";
import { openBenchDatabase } from "./support-db.ts";

const { values } = parseArgs({
  options: {
    rows: { type: "string", default: "10000000" },
    samples: { type: "string", default: "200" },
    url: { type: "string" },
    diagnose: { type: "boolean", default: false },
  },
});
const ROWS = Number(values.rows);
const SAMPLES = Number(values.samples);
const USERS = Math.max(10, Math.floor(ROWS / 20));
const SKUS = 1_000;
const CHUNK = 500_000;

async function fill(sql: postgres.Sql): Promise<void> {
  // The months the rows fall in need their partitions (the service's maintenance makes them ahead of time).
  for (let m = 0; m < 4; m++) {
    await sql`select create_history_partition('entitlement_audit', (date_trunc('month', now()) - make_interval(months => ${m}))::date)`;
  }
  const started = performance.now();
  for (let from = 1; from <= ROWS; from += CHUNK) {
    const to = Math.min(ROWS, from + CHUNK - 1);
    // Callers: 20 API tokens for most rows, the console for 1 in 100, none (the scheduler's EXPIRE) for 2 in 100.
    await sql`
      insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, source,
                                     source_id, caller, trace_id)
      select gen_random_uuid(), now() - random() * interval '85 days', 'user-' || (random() * ${USERS})::int,
             'sku-' || (random() * ${SKUS})::int, a.action, (random() * 5)::int, 'purchase', 'p-' || i,
             case when a.action = 'EXPIRE' then null when i % 100 = 1 then 'console:support-lead'
                  else 'token-' || (i % 20) end,
             md5(i::text)
      from generate_series(${from}::bigint, ${to}::bigint) i
      cross join lateral (select case when i % 50 = 0 then 'EXPIRE' when i % 12 = 0 then 'EXTEND'
                                      when i % 3 = 0 then 'REVOKE' else 'GRANT' end as action) a`;
    console.error(`filled ${to}/${ROWS} rows (${round((performance.now() - started) / 1000)} s)`);
  }
  await sql`vacuum analyze entitlement_audit`;
}

const pick = (n: number) => Math.floor(Math.random() * n);
const dayAgo = (days: number) => new Date(Date.now() - days * 86_400_000);

const KINDS: Record<string, () => AuditFilter> = {
  "no filter": () => ({}),
  user: () => ({ userId: `user-${pick(USERS)}` }),
  "user and SKU": () => ({ userId: `user-${pick(USERS)}`, sku: `sku-${pick(SKUS)}` }),
  SKU: () => ({ sku: `sku-${pick(SKUS)}` }),
  "SKU and action": () => ({ sku: `sku-${pick(SKUS)}`, action: "REVOKE" }),
  "caller (an API token)": () => ({ caller: `token-${pick(20)}` }),
  "caller (the console)": () => ({ caller: "console:support-lead" }),
  "action EXTEND": () => ({ action: "EXTEND" }),
  "one day": () => {
    const from = dayAgo(1 + pick(80));
    return { from, to: new Date(from.getTime() + 86_400_000) };
  },
  "caller and one week": () => {
    const from = dayAgo(7 + pick(70));
    return { caller: "console:support-lead", from, to: new Date(from.getTime() + 7 * 86_400_000) };
  },
};

/** The search's SQL and parameters, as the service sends them, for EXPLAIN. */
function recording(sql: postgres.Sql) {
  let last: { string: string; parameters: unknown[] } | undefined;
  const db = Object.assign((...args: Parameters<postgres.Sql>) => {
    const query = (sql as unknown as (...a: unknown[]) => unknown)(...args);
    last = query as typeof last;
    return query;
  }, sql) as unknown as postgres.Sql;
  return { db, last: () => last };
}

async function measure(sql: postgres.Sql): Promise<void> {
  const rec = recording(sql);
  const table: string[] = [];
  for (const [kind, filter] of Object.entries(KINDS)) {
    const ms: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const started = performance.now();
      const page = await searchAuditPage(sql, { filter: filter() });
      // A second page on half of the runs: the keyset condition is part of what is timed.
      if (i % 2 === 1 && page.nextCursor) await searchAuditPage(sql, { filter: filter(), cursor: page.nextCursor });
      ms.push(performance.now() - started);
    }
    const s = summarize(ms);
    table.push(
      `${kind.padEnd(24)} p50 ${round(s.p50).toString().padStart(7)} ms   p99 ${round(s.p99).toString().padStart(7)} ms`,
    );
    await searchAuditPage(rec.db, { filter: filter() });
    const q = rec.last();
    if (!q) continue;
    const plan = await sql.unsafe(`explain (analyze, buffers, costs off) ${q.string}`, q.parameters as never[]);
    console.log(`\n-- ${kind}\n${plan.map((r) => r["QUERY PLAN"]).join("\n")}`);
  }
  console.log(`\naudit search, ${ROWS} rows, ${SAMPLES} searches per kind (every other one with its second page):`);
  for (const line of table) console.log(line);
}

type Sample = { i: number; ms: number; filter: AuditFilter; secondPage: boolean };

/** The samples of one kind, each with its filter, so that the slowest can be looked at. */
async function samples(sql: postgres.Sql, filter: () => AuditFilter): Promise<Sample[]> {
  const out: Sample[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const f = filter();
    const started = performance.now();
    const page = await searchAuditPage(sql, { filter: f });
    const cursor = i % 2 === 1 ? page.nextCursor : null;
    if (cursor) await searchAuditPage(sql, { filter: f, cursor });
    const secondPage = cursor !== null;
    out.push({ i, ms: performance.now() - started, filter: f, secondPage });
  }
  return out;
}

/**
 * Each kind again under each plan_cache_mode (postgres.js prepares every statement: from the sixth run PostgreSQL may
 * switch to a generic plan), with the slowest searches: a slow first sample is a cold cache, a slow sixth one the plan.
 */
async function diagnose(sql: postgres.Sql): Promise<void> {
  for (const mode of ["auto", "force_custom_plan", "force_generic_plan"]) {
    await sql.unsafe(`set plan_cache_mode = ${mode}`);
    for (const [kind, filter] of Object.entries(KINDS)) {
      const all = await samples(sql, filter);
      const s = summarize(all.map((x) => x.ms));
      const slow = [...all].sort((a, b) => b.ms - a.ms).slice(0, 3);
      const said = slow.map((x) => `#${x.i} ${round(x.ms)} ms${x.secondPage ? " (2 pages)" : ""}`).join(", ");
      console.log(
        `${mode.padEnd(18)} ${kind.padEnd(24)} p50 ${round(s.p50)} ms p99 ${round(s.p99)} ms; slowest ${said}`,
      );
    }
  }
  await sql`reset plan_cache_mode`;
}

const db = await openBenchDatabase(values.url, "audit");
const sql = postgres(db.url, { max: 1, onnotice: () => {}, connection: { search_path: SCHEMA } });
try {
  await fill(sql);
  await measure(sql);
  if (values.diagnose) await diagnose(sql);
} finally {
  await sql.end();
  await db.stop();
}
