// The relay's claim (markOutboxPublishedAndClaim, the statement the service sends) explained by auto_explain on its own
// stock cluster: a backlog of 20,000 new events behind a history of events already claimed and published since the
// last vacuum (whose entries the new-events index still holds), with statistics taken before the backlog (stale) or
// after it (fresh), from the oldest (no cursor) and from the cursor a chained claim carries.
//   bun tests/bench/outbox-claim-explain.ts                 history of 10,000 and 1,000,000 events
//   bun tests/bench/outbox-claim-explain.ts --history 50000 one history size
import postgres from "postgres";
import { SCHEMA, schemaText } from "../../src/entitlement/migrations.ts";
import { markOutboxPublishedAndClaim } from "../../src/entitlement/work/outbox/queries.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { startOwnPostgres } from "./own-cluster.ts";

const BACKLOG = 20_000;
const LIMIT = 400;
const given = process.argv.indexOf("--history");
const histories = given > 0 ? [Number(process.argv[given + 1])] : [10_000, 1_000_000];

const pg = await startOwnPostgres();
const plans: string[] = [];
const sql = postgres(pg.url, {
  max: 1,
  connection: { search_path: SCHEMA },
  onnotice: (notice) => {
    if (String(notice.message).includes("Query Text")) plans.push(String(notice.message));
  },
});

/** Rows of `n` events 1 ms apart from `from`, in one statement. */
async function insertEvents(n: number, from: Date, status: string) {
  await sql`
    insert into outbox_events (event_id, event_type, aggregate_key, payload, status, created_at)
    select gen_random_uuid(), 'EntitlementGranted', 'u' || i || ':s', '{}', ${status}, ${from}::timestamptz + i * interval '1 ms'
    from generate_series(1, ${n}) i`;
}

/** The plan lines that matter: each node and its buffers, for the new-events branch. */
function summary(plan: string): string[] {
  return plan
    .split("\n")
    .filter((l) => /Scan|Sort|Buffers|Limit|actual time/.test(l))
    .slice(0, 8)
    .map((l) => l.trimEnd());
}

async function explainClaim(label: string, after: Date | undefined) {
  plans.length = 0;
  await sql
    .begin(async (tx) => {
      await tx.unsafe("load 'auto_explain'");
      await tx.unsafe("set local auto_explain.log_min_duration = 0");
      await tx.unsafe("set local auto_explain.log_analyze = on");
      await tx.unsafe("set local auto_explain.log_buffers = on");
      await tx.unsafe("set local auto_explain.log_nested_statements = on");
      await tx.unsafe("set local client_min_messages = log");
      const started = performance.now();
      const { claimed } = await markOutboxPublishedAndClaim(tx, {
        lockedBy: "bench",
        published: [],
        claim: {
          now: new Date(),
          leaseUntil: new Date(Date.now() + 30_000),
          lockedBy: "bench",
          limit: LIMIT,
          maxAttempts: 10,
          after,
        },
      });
      console.log(`\n${label}: ${claimed.length} claimed in ${(performance.now() - started).toFixed(2)} ms`);
      for (const line of summary(plans.at(-1) ?? "")) console.log(`  ${line}`);
      throw new Error("rollback");
    })
    .catch((error) => {
      if ((error as Error).message !== "rollback") throw error;
    });
}

try {
  await migrate(sql, SCHEMA, schemaText);
  // The moment measured is a drain before autovacuum comes round: it must not come round during the measurement.
  await sql`alter table outbox_events set (autovacuum_enabled = off)`;
  for (const history of histories) {
    await sql`truncate outbox_events`;
    await sql`vacuum analyze outbox_events`;
    const start = new Date(Date.now() - 3_600_000);
    // History: new events, then claimed and published, as a drain leaves them before vacuum comes round.
    await insertEvents(history, start, "PENDING");
    await sql`update outbox_events set status = 'PUBLISHED', published_at = now()`;
    const cursor = new Date(start.getTime() + history);
    await insertEvents(BACKLOG, cursor, "PENDING");
    console.log(
      `\n=== history ${history.toLocaleString("en")} published events, backlog ${BACKLOG.toLocaleString("en")}`,
    );
    await explainClaim("stale statistics, from the oldest", undefined);
    await explainClaim("stale statistics, from the cursor", cursor);
    await sql`analyze outbox_events`;
    await explainClaim("fresh statistics, from the oldest", undefined);
    await explainClaim("fresh statistics, from the cursor", cursor);
  }
} finally {
  await sql.end();
  pg.stop();
}
