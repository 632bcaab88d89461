// The data of the growth phase (growth.ts): a deployment a year on, written with generate_series straight into the
// tables. `n` audit rows, ledger rows, notifications, outbox events, idempotency records and processed events;
// n/10 entitlements. The audit and the ledger are spread over twelve month partitions (created as maintenance would,
// from the next month on, so the rows land in months rather than in the partition of the rows from before the
// partitioning); what retention deletes is the oldest 1% of each deleted table.
import type postgres from "postgres";

export const OLD_FRACTION = 0.01;
/** Per item (user and SKU), per user's ledger and per user's inbox: the rows one query reads. */
export const AUDIT_PER_ITEM = 4;
export const LEDGER_PER_USER = 50;
export const INBOX_PER_USER = 50;
export const ENTITLEMENTS_PER_USER = 10;
const SKUS = 5;
const CHUNK = 1_000_000;

export type Shape = { n: number; auditUsers: number; ledgerUsers: number; inboxUsers: number; listUsers: number };

export function shapeOf(n: number): Shape {
  return {
    n,
    auditUsers: Math.max(1, Math.floor(n / (AUDIT_PER_ITEM * SKUS))),
    ledgerUsers: Math.max(1, Math.floor(n / LEDGER_PER_USER)),
    inboxUsers: Math.max(1, Math.floor(n / INBOX_PER_USER)),
    listUsers: Math.max(1, Math.floor(n / 10 / ENTITLEMENTS_PER_USER)),
  };
}

/** Runs `fill(from, to)` over [0, n) in chunks, so no statement holds a transaction open for millions of rows. */
async function chunked(n: number, fill: (from: number, to: number) => Promise<unknown>): Promise<void> {
  for (let from = 0; from < n; from += CHUNK) await fill(from, Math.min(n, from + CHUNK) - 1);
}

/** Twelve month partitions from the next month on; returns the first instant of the first and after the last. */
async function yearOfMonths(sql: postgres.Sql): Promise<{ from: Date; to: Date }> {
  const now = new Date();
  const month = (k: number) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + k, 1));
  for (let k = 1; k <= 12; k++) {
    for (const parent of ["entitlement_audit", "point_transactions"]) {
      await sql`select entitlement.create_history_partition(${parent}, ${month(k).toISOString().slice(0, 10)}::date)`;
    }
  }
  return { from: month(1), to: month(13) };
}

export async function populate(sql: postgres.Sql, shape: Shape, progress: (line: string) => void): Promise<void> {
  const { n } = shape;
  const year = await yearOfMonths(sql);
  const span = (year.to.getTime() - year.from.getTime()) / 1000;
  await chunked(
    n,
    (from, to) => sql`
    insert into entitlement.entitlement_audit
      (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, source, source_id, request_id, caller,
       detail, trace_id)
    select gen_random_uuid(), ${year.from}::timestamptz + (i::float8 / ${n} * ${span}) * interval '1 second',
           'user-' || (i % ${shape.auditUsers}), 'sku-' || ((i / ${shape.auditUsers}) % ${SKUS}),
           'GRANT', i / ${shape.auditUsers * SKUS}, 'purchase', 'p-' || i, 'key-' || i, 'shop',
           jsonb_build_object('reason', 'purchase'), to_hex(i)
    from generate_series(${from}::bigint, ${to}::bigint) as i`,
  );
  progress(`  growth: ${n} audit rows`);
  await chunked(
    n,
    (from, to) => sql`
    insert into entitlement.point_transactions (transaction_id, reservation_id, user_id, point_amount, reason, created_at)
    select gen_random_uuid(), gen_random_uuid(), 'user-' || (i % ${shape.ledgerUsers}), 10, 'match',
           ${year.from}::timestamptz + (i::float8 / ${n} * ${span}) * interval '1 second'
    from generate_series(${from}::bigint, ${to}::bigint) as i`,
  );
  progress(`  growth: ${n} ledger rows`);
  await sql`
    insert into entitlement.entitlements (user_id, stock_keeping_unit, status, granted_at, source, source_id, updated_at)
    select 'user-' || (i % ${shape.listUsers}), 'sku-' || (i / ${shape.listUsers}), 'ACTIVE', now(), 'purchase',
           'p-' || i, now() - i * interval '1 second'
    from generate_series(0, ${Math.floor(n / 10) - 1}) as i`;
  await populateDeleted(sql, shape);
  progress(`  growth: ${n} rows in each table retention deletes from`);
  await sql`vacuum analyze`;
}

/** The oldest 1% of each is past its retention threshold (rows i < n/100 are the old ones). */
export const DELETED_TABLES = ["outbox_events", "idempotency_keys", "processed_events", "notifications"] as const;
export type DeletedTable = (typeof DELETED_TABLES)[number];

export async function populateDeleted(
  sql: postgres.Sql,
  { n, inboxUsers }: Shape,
  tables: readonly DeletedTable[] = DELETED_TABLES,
): Promise<void> {
  const old = Math.floor(n * OLD_FRACTION);
  // Old rows: 40 days ago and older; the rest within the last day (every retention threshold lies between).
  const age = (i: string) =>
    `now() - case when ${i} < ${old} then interval '40 days' + (${old} - ${i}) * interval '1 second' ` +
    `else (${n} - ${i}) * interval '1 millisecond' end`;
  const fills: Record<DeletedTable, (from: number, to: number) => Promise<unknown>> = {
    outbox_events: (from, to) =>
      sql.unsafe(`
        insert into entitlement.outbox_events
          (event_id, event_type, aggregate_key, payload, status, attempt_count, created_at, published_at)
        select gen_random_uuid(), 'EntitlementGranted', 'user-' || i || ':sku', '{"event_id":"x","version":0}',
               'PUBLISHED', 1, ${age("i")}, ${age("i")}
        from generate_series(${from}::bigint, ${to}::bigint) as i`),
    idempotency_keys: (from, to) =>
      sql.unsafe(`
        insert into entitlement.idempotency_keys
          (caller, idem_key, request_hash, response_code, response_body, expires_at)
        select 'shop', 'key-' || i, md5(i::text), 200, '{"status":"ACTIVE"}', ${age("i")} + interval '1 day'
        from generate_series(${from}::bigint, ${to}::bigint) as i`),
    processed_events: (from, to) =>
      sql.unsafe(`
        insert into notification.processed_events (event_id, processed_at)
        select gen_random_uuid(), ${age("i")} from generate_series(${from}::bigint, ${to}::bigint) as i`),
    notifications: (from, to) =>
      sql.unsafe(`
        insert into notification.notifications
          (notification_id, event_id, user_id, type, occurred_at, payload_json, status, attempt_count, created_at,
           sent_at)
        select gen_random_uuid(), gen_random_uuid(), 'user-' || (i % ${inboxUsers}), 'EntitlementGranted',
               ${age("i")}, '{"sku":"sku-1"}', 'SENT', 1, ${age("i")}, ${age("i")}
        from generate_series(${from}::bigint, ${to}::bigint) as i`),
  };
  for (const table of tables) await chunked(n, fills[table]);
}
