// The growth phase: the reads a caller makes and one retention run, on a small and a large deployment (growth-data.ts),
// so that their cost can be compared as the history grows. Reads: p50/p99 of the service's own query functions for
// the history of one item, a user's entitlement list, a user's points ledger and the debug inbox, each on one
// connection, one at a time, over random users (cold: at the large size most of what a read touches is not in
// shared_buffers), and again over a fixed set of 200 users read once beforehand (cached: the query's own cost, which
// the cold figure at 100,000 rows already is, since that whole database fits in shared_buffers). Retention: one run
// of each table's bounded delete loop, in ms per 1,000 deleted rows. Each size gets its own database on the bench's PostgreSQL, dropped afterwards.
import postgres from "postgres";
import { listEntitlementsOfUser } from "../../src/entitlement/features/entitlements/queries.ts";
import { listAuditOfEntitlement } from "../../src/entitlement/features/history/queries.ts";
import { listTransactions } from "../../src/entitlement/features/points/ledger-queries.ts";
import { schemaText as entitlementSchema } from "../../src/entitlement/migrations.ts";
import {
  deleteExpiredIdempotencyKeys,
  deletePublishedOutboxEvents,
} from "../../src/entitlement/work/retention/queries.ts";
import { findInbox } from "../../src/notification/features/debug-inbox/queries.ts";
import { schemaText as notificationSchema } from "../../src/notification/migrations.ts";
import { deleteFinishedNotifications, deleteProcessedEvents } from "../../src/notification/work/retention/queries.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { untilShortBatch } from "../../src/shared/periodic.ts";
import { type DeletedTable, populate, populateDeleted, type Shape, shapeOf } from "./growth-data.ts";
import type { Figure } from "./report.ts";
import { createDatabase, dropDatabase } from "./stack.ts";

/** `retentionOnly`: only those tables, filled and cleaned (no reads): retention at sizes the reads' tables would not fit. */
export type GrowthOptions = { sizes: number[]; samples: number; explain: boolean; retentionOnly?: DeletedTable[] };
type Read = "history" | "list" | "ledger" | "inbox";
type ReadFigures = { p50Ms: number; p99Ms: number };
export type GrowthSize = {
  rows: number;
  populateSeconds: number;
  reads: Partial<Record<Read, ReadFigures>>;
  cachedReads: Partial<Record<Read, ReadFigures>>;
  retention: Record<string, { deleted: number; ms: number; msPer1000: number }>;
  explain?: Record<Read, string>;
};

const DAY_MS = 86_400_000;
/** Random users; with `fixed`, drawn from the first `fixed` users only (a set that stays in shared_buffers). */
const pick = (users: number, fixed?: number) => `user-${Math.floor(Math.random() * Math.min(users, fixed ?? users))}`;
const CACHED_USERS = 200;
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/** Each read as the service runs it (schema entitlement or notification on the search path of `db`). */
function reads(e: postgres.Sql, n: postgres.Sql, shape: Shape, fixed?: number): Record<Read, () => Promise<unknown>> {
  return {
    history: () =>
      listAuditOfEntitlement(e, {
        userId: pick(shape.auditUsers, fixed),
        sku: `sku-${Math.floor(Math.random() * 5)}`,
        limit: 50,
      }),
    list: () => listEntitlementsOfUser(e, { userId: pick(shape.listUsers, fixed), limit: 51 }),
    ledger: () => listTransactions(e, { userId: pick(shape.ledgerUsers, fixed), limit: 51 }),
    inbox: () => findInbox(n, { userId: pick(shape.inboxUsers, fixed), limit: 50 }),
  };
}

/** The EXPLAIN (ANALYZE, BUFFERS) of each read for one user, in the text docs/benchmarks.md shows. */
async function explainReads(e: postgres.Sql, n: postgres.Sql): Promise<Record<Read, string>> {
  const plan = async (db: postgres.Sql, text: string) =>
    (await db.unsafe(`explain (analyze, buffers, costs off, timing off, summary off) ${text}`))
      .map((r) => Object.values(r).join(""))
      .join("\n");
  return {
    history: await plan(
      e,
      `select a.audit_id, a.action, a.version, a.occurred_at from entitlement_audit a
      where a.user_id = 'user-7' and a.stock_keeping_unit = 'sku-1'
      order by coalesce(a.version, -1) desc, a.occurred_at desc, a.audit_id desc limit 50`,
    ),
    list: await plan(
      e,
      `select user_id, stock_keeping_unit, status, updated_at from entitlements
      where user_id = 'user-7' order by updated_at desc, stock_keeping_unit limit 51`,
    ),
    ledger: await plan(
      e,
      `select transaction_id, point_amount, created_at from point_transactions
      where user_id = 'user-7' order by created_at desc, transaction_id desc limit 51`,
    ),
    inbox: await plan(
      n,
      `select notification_id, type, status, created_at from notifications
      where user_id = 'user-7' order by seq desc limit 50`,
    ),
  };
}

async function measureReads(e: postgres.Sql, n: postgres.Sql, shape: Shape, samples: number, fixed?: number) {
  const result = {} as GrowthSize["reads"];
  for (const [name, run] of Object.entries(reads(e, n, shape, fixed)) as [Read, () => Promise<unknown>][]) {
    // Warm the prepared statement (and, for the cached pass, read each of its users' rows about five times over).
    const warm = fixed ? fixed * 5 : Math.min(50, samples);
    for (let i = 0; i < warm; i++) await run();
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const t = performance.now();
      await run();
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    result[name] = { p50Ms: quantile(times, 0.5), p99Ms: quantile(times, 0.99) };
  }
  return result;
}

/** One retention run per table, with the services' default thresholds and batch size. */
async function measureRetention(
  e: postgres.Sql,
  n: postgres.Sql,
  tables?: DeletedTable[],
): Promise<GrowthSize["retention"]> {
  const now = new Date();
  const limit = 1000;
  // Each run resumes every batch where the one before stopped, as the services' retention does.
  const resume = { idempotency_keys: {}, outbox_events: {}, notifications: {}, processed_events: {} };
  const runs: Record<DeletedTable, (l: number) => Promise<number>> = {
    idempotency_keys: (l) => deleteExpiredIdempotencyKeys(e, { now, limit: l, resume: resume.idempotency_keys }),
    outbox_events: (l) =>
      deletePublishedOutboxEvents(e, {
        threshold: new Date(now.getTime() - DAY_MS),
        limit: l,
        resume: resume.outbox_events,
      }),
    notifications: (l) =>
      deleteFinishedNotifications(n, {
        threshold: new Date(now.getTime() - 30 * DAY_MS),
        limit: l,
        resume: resume.notifications,
      }),
    processed_events: (l) =>
      deleteProcessedEvents(n, {
        threshold: new Date(now.getTime() - 30 * DAY_MS),
        limit: l,
        resume: resume.processed_events,
      }),
  };
  const result: GrowthSize["retention"] = {};
  for (const [table, step] of Object.entries(runs)) {
    if (tables && !tables.includes(table as DeletedTable)) continue;
    await step(0); // a statement that deletes nothing: the connection's catalog cache and prepared statement are warm
    const t = performance.now();
    const deleted = await untilShortBatch(step, limit);
    const ms = performance.now() - t;
    result[table] = { deleted, ms, msPer1000: deleted > 0 ? (ms / deleted) * 1000 : 0 };
  }
  return result;
}

export async function measureGrowth(args: {
  adminUrl: string;
  tag: string;
  options: GrowthOptions;
  progress: (line: string) => void;
}): Promise<{ sizes: GrowthSize[]; figures: Figure[] }> {
  const sizes: GrowthSize[] = [];
  for (const rows of args.options.sizes) {
    const name = `bench_growth_${args.tag}_${rows}`;
    const url = await createDatabase(args.adminUrl, name);
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    const e = postgres(url, { max: 1, onnotice: () => {}, connection: { search_path: "entitlement" } });
    const n = postgres(url, { max: 1, onnotice: () => {}, connection: { search_path: "notification" } });
    try {
      await migrate(admin, "entitlement", entitlementSchema);
      await migrate(admin, "notification", notificationSchema);
      args.progress(`growth: populating ${rows} rows per table`);
      const t = performance.now();
      const shape = shapeOf(rows);
      const only = args.options.retentionOnly;
      if (only) {
        await populateDeleted(admin, shape, only);
        await admin`vacuum analyze`;
      } else {
        await populate(admin, shape, args.progress);
      }
      const populateSeconds = (performance.now() - t) / 1000;
      args.progress(`growth: ${rows} rows: reads (${args.options.samples} each), then one retention run`);
      const measured = only ? {} : await measureReads(e, n, shape, args.options.samples);
      const cached = only ? {} : await measureReads(e, n, shape, args.options.samples, CACHED_USERS);
      const explain = args.options.explain && !only ? await explainReads(e, n) : undefined;
      const retention = await measureRetention(e, n, only);
      sizes.push({
        rows,
        populateSeconds,
        reads: measured,
        cachedReads: cached,
        retention,
        ...(explain ? { explain } : {}),
      });
    } finally {
      await Promise.all([admin.end(), e.end(), n.end()]);
      await dropDatabase(args.adminUrl, name);
    }
  }
  return { sizes, figures: growthFigures(sizes) };
}

function growthFigures(sizes: GrowthSize[]): Figure[] {
  const figures: Figure[] = [];
  for (const s of sizes) {
    for (const [read, r] of Object.entries(s.reads)) {
      figures.push({
        name: `growth ${read} p99 at ${s.rows} rows (p50 ${r.p50Ms.toFixed(2)} ms)`,
        value: r.p99Ms,
        unit: "ms",
      });
    }
    for (const [read, r] of Object.entries(s.cachedReads)) {
      figures.push({
        name: `growth ${read} cached p99 at ${s.rows} rows (p50 ${r.p50Ms.toFixed(2)} ms)`,
        value: r.p99Ms,
        unit: "ms",
      });
    }
    for (const [table, r] of Object.entries(s.retention)) {
      figures.push({
        name: `growth retention ${table} at ${s.rows} rows (${r.deleted} deleted in ${r.ms.toFixed(0)} ms)`,
        value: r.msPer1000,
        unit: "ms/1000 rows",
      });
    }
  }
  const [small, large] = [sizes[0], sizes.at(-1)];
  if (small && large && large !== small) {
    for (const read of Object.keys(large.reads) as Read[]) {
      const [l, s] = [large.reads[read], small.reads[read]];
      if (!l || !s) continue;
      figures.push({
        name: `growth ${read} p99 ${large.rows} ÷ ${small.rows} rows`,
        value: l.p99Ms / s.p99Ms,
        unit: "",
        target: { op: "<=", value: 2 },
      });
      const [lc, sc] = [large.cachedReads[read], small.cachedReads[read]];
      if (!lc || !sc) continue;
      figures.push({
        name: `growth ${read} cached p99 ${large.rows} ÷ ${small.rows} rows`,
        value: lc.p99Ms / sc.p99Ms,
        unit: "",
        target: { op: "<=", value: 2 },
      });
    }
  }
  return figures;
}
