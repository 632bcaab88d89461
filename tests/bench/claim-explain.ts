// EXPLAIN (ANALYZE, BUFFERS) of the delivery claim on its own stock cluster, with 50,000 PENDING retries not due yet
// (older than the due rows, so a created_at walk meets them first) and 100 due first attempts; the custom and the
// generic plan (the service's claim is a prepared statement, which PostgreSQL may keep generic after five runs).
//   bun tests/bench/claim-explain.ts            the claim of src/notification/work/delivery/queries.ts, every migration
//   bun tests/bench/claim-explain.ts --before   the claim before migration 007 (one OR), without that migration
import postgres from "postgres";
import { migrations, SCHEMA } from "../../src/notification/migrations.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { startOwnPostgres } from "./own-cluster.ts";

const before = process.argv.includes("--before");
const PICK_BEFORE = `
  picked as (
    select notification_id from notifications
    where (status = 'PENDING' and (next_retry_at is null or next_retry_at <= $1))
       or (status = 'PROCESSING' and (lease_until is null or lease_until <= $1))
    order by created_at limit 100
    for update skip locked
  )`;
const PICK_AFTER = `
  fresh as materialized (
    select notification_id, created_at from notifications where status = 'PENDING' and next_retry_at is null
    order by created_at limit 100 for update skip locked
  ), retry_due as materialized (
    select notification_id, created_at from notifications
    where status = 'PENDING' and next_retry_at is not null and next_retry_at <= $1
    order by next_retry_at limit 100 for update skip locked
  ), lease_expired as materialized (
    select notification_id, created_at from notifications
    where status = 'PROCESSING' and (lease_until is null or lease_until <= $1)
    order by lease_until limit 100 for update skip locked
  ), picked as (
    select notification_id from (
      select * from fresh union all select * from retry_due union all select * from lease_expired
    ) due order by created_at limit 100
  )`;

const pg = await startOwnPostgres();
const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
try {
  await migrate(sql, SCHEMA, {
    migrations: before ? migrations.filter((m) => m.version < 7) : migrations,
    functions: [],
  });
  await sql.unsafe(`set search_path = ${SCHEMA}`);
  await sql`
    insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                               attempt_count, next_retry_at, created_at)
    select gen_random_uuid(), gen_random_uuid(), 'u' || i, 'T', now(), '{}', 'PENDING',
           case when i <= 50000 then 1 else 0 end,
           case when i <= 50000 then now() + interval '1 hour' end,
           now() - interval '2 hours' + i * interval '1 ms'
    from generate_series(1, 50100) i`;
  await sql`vacuum analyze notifications`;
  await sql.unsafe(`prepare claim(timestamptz) as with ${before ? PICK_BEFORE : PICK_AFTER}
    update notifications n set status = 'PROCESSING', attempt_count = n.attempt_count + 1
    from picked where n.notification_id = picked.notification_id`);
  for (const mode of ["force_custom_plan", "force_generic_plan"]) {
    // Each run's update is rolled back, so both plans see the same rows.
    await sql
      .begin(async (tx) => {
        await tx.unsafe(`set local plan_cache_mode = ${mode}`);
        const rows = await tx.unsafe("explain (analyze, buffers, costs off) execute claim(now())");
        console.log(`-- ${mode}\n${rows.map((r) => r["QUERY PLAN"]).join("\n")}`);
        throw new Error("rollback");
      })
      .catch(() => {});
  }
} finally {
  await sql.end();
  pg.stop();
}
