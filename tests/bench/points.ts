// Point reservations executed by the running Entitlement's scheduler. Drain: a backlog of due reservations (inserted
// with SQL in one statement, due one second later) executed as fast as the scheduler can; reservations/s from the due
// time to the last executed_at. Lateness: reservations due at a steady rate (inserted ahead, execute_at spaced 1/rate
// apart); executed_at − execute_at per reservation, which the scheduler must keep small by waking at each due time.
import type postgres from "postgres";
import { summarize } from "./stats.ts";

type Args = { sql: postgres.Sql; prefix: string; timeoutMs: number; progress: (line: string) => void };

/** Inserts `count` reservations spread over 1,000 users, the i-th due at `first` + i × `spacingMs`. */
async function insertReservations(sql: postgres.Sql, prefix: string, count: number, first: Date, spacingMs: number) {
  await sql`
    insert into entitlement.point_reservations
      (reservation_id, user_id, point_amount, execute_at, reason, status, due_at, created_at, updated_at)
    select gen_random_uuid(), ${prefix} || '-' || (g % 1000), 1 + g % 100,
           ${first}::timestamptz + (g * ${spacingMs}::float8) * interval '1 millisecond', 'bench', 'PENDING',
           ${first}::timestamptz + (g * ${spacingMs}::float8) * interval '1 millisecond', now(), now()
    from generate_series(0, ${count - 1}::int) g`;
}

/**
 * Waits until no reservation is left unfinished, then counts the executed ones. The phase has the database to itself,
 * so "nothing unfinished" needs no prefix and is one probe of the partial index the scheduler claims through (ordered
 * by its key, so the planner takes the index); a count(*) of the prefix every 250 ms (a scan of up to 120,000 rows)
 * took PostgreSQL CPU from the scheduler it measures, and so did `exists (…)` without the order, planned as a scan of
 * the table (0.17 backends busy on average in pg_stat_activity samples). The count for the progress line runs every 5 s.
 */
async function waitDone(args: Args, count: number): Promise<number> {
  const deadline = Date.now() + args.timeoutMs;
  const executed = async () => {
    const [row] = await args.sql<{ n: number }[]>`
      select count(*)::int as n from entitlement.point_reservations
      where user_id like ${`${args.prefix}-%`} and status = 'DONE'`;
    return row?.n ?? 0;
  };
  for (let polls = 1; ; polls++) {
    const open = await args.sql`
      select 1 from entitlement.point_reservations where status in ('PENDING', 'PROCESSING')
      order by due_at limit 1`;
    if (open.length === 0 || Date.now() > deadline) return executed();
    if (polls % 10 === 0) args.progress(`points: ${await executed()}/${count} executed`);
    await Bun.sleep(500);
  }
}

export async function drainReservationBacklog(
  args: Args & { count: number },
): Promise<{ perSecond: number; seconds: number; executed: number }> {
  await insertReservations(args.sql, args.prefix, args.count, new Date(Date.now() + 1_000), 0);
  const executed = await waitDone(args, args.count);
  const [span] = await args.sql<{ seconds: number }[]>`
    select extract(epoch from max(executed_at) - min(execute_at))::float8 as seconds
    from entitlement.point_reservations where user_id like ${`${args.prefix}-%`} and status = 'DONE'`;
  const seconds = span?.seconds ?? Number.NaN;
  return { perSecond: executed / seconds, seconds, executed };
}

/** How the lateness came about, to tell a slow wake-up from too little throughput (docs/benchmarks.md). */
export type LatenessShape = {
  /** Lane transactions: the items of one lane share their executed_at. */
  transactions: number;
  itemsPerTransaction: number;
  /** p50 lateness of the reservations due in each second of the run, in ms: rising means throughput falls short. */
  p50BySecond: number[];
};

async function latenessShape(sql: postgres.Sql, prefix: string): Promise<LatenessShape> {
  const [t] = await sql<{ transactions: number; items: number }[]>`
    select count(distinct executed_at)::int as transactions, count(*)::int as items
    from entitlement.point_reservations where user_id like ${`${prefix}-%`} and status = 'DONE'`;
  const seconds = await sql<{ p50: number }[]>`
    select percentile_cont(0.5) within group (order by extract(epoch from executed_at - execute_at))::float8 * 1000
      as p50
    from entitlement.point_reservations where user_id like ${`${prefix}-%`} and status = 'DONE'
    group by date_trunc('second', execute_at) order by date_trunc('second', execute_at)`;
  const transactions = t?.transactions ?? 0;
  return {
    transactions,
    itemsPerTransaction: transactions ? (t?.items ?? 0) / transactions : 0,
    p50BySecond: seconds.map((r) => Math.round(r.p50)),
  };
}

export async function measureLateness(
  args: Args & { rate: number; seconds: number },
): Promise<{ p50Ms: number; p99Ms: number; maxMs: number; executed: number; count: number } & LatenessShape> {
  const count = Math.round(args.rate * args.seconds);
  await insertReservations(args.sql, args.prefix, count, new Date(Date.now() + 2_000), 1000 / args.rate);
  const executed = await waitDone({ ...args, timeoutMs: args.timeoutMs + args.seconds * 1000 }, count);
  const rows = await args.sql<{ ms: number }[]>`
    select extract(epoch from executed_at - execute_at)::float8 * 1000 as ms
    from entitlement.point_reservations where user_id like ${`${args.prefix}-%`} and status = 'DONE'`;
  const s = summarize(rows.map((r) => r.ms));
  if (rows.some((r) => r.ms < 0)) throw new Error("a reservation was executed before its execute_at");
  return { p50Ms: s.p50, p99Ms: s.p99, maxMs: s.max, executed, count, ...(await latenessShape(args.sql, args.prefix)) };
}
