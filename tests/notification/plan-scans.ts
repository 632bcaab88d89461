// The check of the storing tests' plans: a statement run more than five times on one connection while `notifications`
// is empty (after five custom plans PostgreSQL may keep a generic one, made for that empty table), the table then
// filled, and the sequential scans of `notifications` counted in the transaction of one more run, with the rows they
// read. A plan that finds rows by key reads none; one made for the empty table may read all of them, every run.
import { createSql, type Db } from "../../src/shared/db.ts";

export async function scansOfPlanMadeOnEmptyTable(args: {
  url: string;
  /** One run of the statement under test, in a transaction of the one connection. */
  run: (db: Db) => Promise<void>;
  /** Fills `notifications` between the runs on the empty table and the one counted. */
  fill: () => Promise<void>;
}): Promise<{ seq: number; read: number } | undefined> {
  // One connection, so every run goes through the same prepared statements and cached plans.
  const one = createSql({ url: args.url, schema: "notification", max: 1, applicationName: "test-plan-scans" });
  try {
    for (let i = 0; i < 8; i++) await one.begin((tx) => args.run(tx));
    await args.fill();
    return await one.begin(async (tx) => {
      await args.run(tx);
      const [row] = await tx<{ seq: number; read: number }[]>`
        select pg_stat_get_xact_numscans('notifications'::regclass)::int as seq,
               pg_stat_get_xact_tuples_returned('notifications'::regclass)::int as read`;
      return row;
    });
  } finally {
    await one.end();
  }
}
