// Bytes on disk per row of every table a grant writes (docs/scaling.md "Growth"): N grants through the service's own
// database function (entitlement_command, with the request body, reply and event payload the API sends), the
// notification rows the consumer stores for them, then each table's size (heap, indexes, TOAST) over its rows after
// VACUUM ANALYZE.
//   bun run tests/bench/row-bytes.ts [--grants 50000]   (DATABASE_URL's server; a scratch database, dropped after)
import { parseArgs } from "node:util";
import postgres from "postgres";
import { schemaText as entitlementSchema } from "../../src/entitlement/migrations.ts";
import { schemaText as notificationSchema } from "../../src/notification/migrations.ts";
import { migrate } from "../../src/shared/migrate.ts";

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { grants: { type: "string", default: "50000" } } });
const grants = Number(values.grants);
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = `bench_row_bytes_${Date.now().toString(36)}`;
const url = new URL(adminUrl);
url.pathname = `/${database}`;

const TABLES = [
  "entitlement.entitlements",
  "entitlement.entitlement_audit",
  "entitlement.outbox_events",
  "entitlement.idempotency_keys",
  "notification.processed_events",
  "notification.notifications",
];

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`create database "${database}"`);
const sql = postgres(url.toString(), { max: 1, onnotice: () => {}, connection: { search_path: "entitlement" } });
try {
  await migrate(sql, "entitlement", entitlementSchema);
  await migrate(sql, "notification", notificationSchema);
  // Ids and names of the sizes the API sees in practice: a 36-character key, a 24-character user id. 500 calls per
  // statement: each call's transaction-scoped advisory lock is held until its statement's transaction ends.
  for (let from = 1; from <= grants; from += 500) {
    await sql.unsafe(`
      select count(*) from (
        select entitlement.entitlement_command(
          'GRANT', 'shop', gen_random_uuid()::text, i, encode(sha256(i::text::bytea), 'hex'), u, 'sku-premium-pass',
          'purchase', p, null, now(), now() + interval '24 hours', 1000, gen_random_uuid(),
          jsonb_build_object('user_id', u, 'stock_keeping_unit', 'sku-premium-pass', 'reason', 'purchase',
            'purchase_id', p),
          t, e, 'EntitlementGranted', u || ':sku-premium-pass',
          jsonb_build_object('event_id', e, 'event_type', 'EntitlementGranted', 'occurred_at', now(), 'user_id', u,
            'stock_keeping_unit', 'sku-premium-pass', 'source', 'purchase', 'source_id', p, 'trace_id', t),
          '00-' || t || '-' || left(md5(p), 16) || '-01',
          jsonb_build_object('user_id', u, 'stock_keeping_unit', 'sku-premium-pass', 'status', 'ACTIVE',
            'granted_at', now(), 'revoked_at', null, 'source', 'purchase', 'source_id', p, 'expires_at', null),
          '{}'::jsonb)
        from (select i, 'player-' || lpad(i::text, 17, '0') as u, 'order-' || lpad(i::text, 20, '0') as p,
                     md5(i::text) as t, gen_random_uuid() as e
              from generate_series(${from}, ${Math.min(grants, from + 499)}) as i) g
      ) calls`);
  }
  await sql.unsafe(`
    set search_path to entitlement;
    insert into notification.processed_events (event_id, processed_at) select event_id, now() from outbox_events;
    insert into notification.notifications (notification_id, event_id, user_id, type, occurred_at, payload_json,
                                            status, attempt_count, created_at, sent_at)
    select gen_random_uuid(), event_id, payload->>'user_id', event_type, created_at, payload, 'SENT', 1, now(), now()
    from outbox_events;`);
  await sql`vacuum analyze`;
  console.log(`${grants} grants; bytes per row (heap + indexes + TOAST, after VACUUM ANALYZE):`);
  for (const table of TABLES) {
    const [row] = await sql.unsafe<{ rows: number; bytes: number }[]>(
      `select (select count(*) from ${table})::float8 as rows, sum(pg_total_relation_size(c))::float8 as bytes
       from (select '${table}'::regclass as c union all select inhrelid::regclass from pg_inherits
             where inhparent = '${table}'::regclass) t`,
    );
    const perRow = row && row.rows > 0 ? row.bytes / row.rows : 0;
    console.log(`  ${table}: ${row?.rows} rows, ${perRow.toFixed(0)} bytes/row`);
  }
} finally {
  await sql.end();
  await admin.unsafe(`drop database if exists "${database}" with (force)`);
  await admin.end();
}
