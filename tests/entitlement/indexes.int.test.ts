// Every index of a table each command writes is read by a named query (docs/architecture.md, "Indexes of the written
// tables"): the list here is that table's (of the partitioned history tables, their parents': each partition has its
// own keys), so a new index fails until it is listed there with its query, and the
// partial indexes of the outbox claim and gauge are the plans PostgreSQL picks for them.
import { expect, test } from "bun:test";
import postgres from "postgres";
import { claimOutboxBatch } from "../../src/entitlement/work/outbox/queries.ts";
import { useTestDatabase } from "../support/infra.ts";

const f = useTestDatabase("ent_indexes", { service: "entitlement", poolMax: 2 });

const DOCUMENTED = [
  "entitlement_audit.entitlement_audit_caller_prefix_idx",
  "entitlement_audit.entitlement_audit_history_idx",
  "entitlement_audit.entitlement_audit_sku_time_idx",
  "entitlement_audit.entitlement_audit_time_idx",
  "entitlement_expiries.entitlement_expiries_due_idx",
  "entitlement_expiries.entitlement_expiries_failed_idx",
  "entitlement_expiries.entitlement_expiries_pkey",
  "entitlements.entitlements_pkey",
  "entitlements.entitlements_user_updated_sku_idx",
  "idempotency_keys.idempotency_expires_idx",
  "idempotency_keys.idempotency_keys_pkey",
  "outbox_events.outbox_events_pkey",
  "outbox_events.outbox_failed_idx",
  "outbox_events.outbox_fresh_idx",
  "outbox_events.outbox_inflight_lease_idx",
  "outbox_events.outbox_published_at_idx",
  "outbox_events.outbox_retry_idx",
  "point_balances.point_balances_pkey",
  "point_reservations.point_reservations_due_idx",
  "point_reservations.point_reservations_failed_idx",
  "point_reservations.point_reservations_finished_idx",
  "point_reservations.point_reservations_pkey",
  "point_transactions.point_transactions_user_idx",
];

test("the written tables have exactly the indexes docs/architecture.md lists with their queries", async () => {
  const rows = await f.sql<{ name: string }[]>`
    select tablename || '.' || indexname as name from pg_indexes
    where schemaname = 'entitlement' and tablename in ('entitlements', 'entitlement_audit', 'idempotency_keys',
      'outbox_events', 'entitlement_expiries', 'point_reservations', 'point_transactions', 'point_balances',
      'point_audit')
    order by 1`;
  const text = await Bun.file("docs/architecture.md").text();
  const named = (name: string) => name.endsWith("_pkey") || name.endsWith("_key") || text.includes(`\`${name}\``);
  expect(
    rows.map((r) => r.name),
    "an index no query reads costs every write: drop it or list its query",
  ).toEqual(DOCUMENTED);
  expect(
    DOCUMENTED.map((n) => n.split(".")[1] as string).filter((n) => !named(n)),
    "each listed by name",
  ).toEqual([]);
});

test("the outbox claim's retry branch and the failure gauge read their partial indexes", async () => {
  const plan = async (query: Promise<{ "QUERY PLAN": string }[]>) =>
    (await query).map((r) => r["QUERY PLAN"]).join("\n");
  await f.sql.begin(async (tx) => {
    // On an empty table a sequential scan is as cheap as any: forbid it to see which index the query can use.
    await tx`set local enable_seqscan = off`;
    const retry = await plan(tx`explain select event_id from outbox_events
      where status = 'PENDING' and next_retry_at <= now() order by created_at limit 50 for update skip locked`);
    expect(retry, "the retry branch of markOutboxPublishedAndClaim").toContain("outbox_retry_idx");
    const failed = await plan(tx`explain select count(*)::int from outbox_events where status = 'FAILED'`);
    expect(failed, "countFailedOutbox").toContain("outbox_failed_idx");
  });
});

test("the claim's lease branches are ranges of outbox_inflight_lease_idx, not a filter over every event in flight", async () => {
  // The claim's own statement, as the relay sends it: captured on a connection of its own, then explained.
  let sent: { text: string; params: unknown[] } | undefined;
  const capture = postgres(f.db.url, {
    max: 1,
    onnotice: () => {},
    connection: { search_path: "entitlement", enable_seqscan: "off" },
    debug: (_connection, text, params) => {
      if (text.includes("lease_expired")) sent = { text, params };
    },
  });
  try {
    const now = new Date();
    await claimOutboxBatch(capture, { now, leaseUntil: now, lockedBy: "test", limit: 10, maxAttempts: 10 });
    if (!sent) throw new Error("the claim's statement was not captured");
    // The captured values are as sent, booleans as 't' and 'f'; handed back to the client they must be booleans again.
    const params = sent.params.map((p) => (p === "t" ? true : p === "f" ? false : p));
    const rows = await capture.unsafe<{ "QUERY PLAN": string }[]>(`explain ${sent.text}`, params as never[]);
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan, "an expired lease: a range").toMatch(/outbox_inflight_lease_idx[\s\S]*Index Cond: \(lease_until <= /);
    expect(plan, "a missing lease: a range").toMatch(
      /outbox_inflight_lease_idx[\s\S]*Index Cond: \(lease_until IS NULL\)/,
    );
    // `lease_until is null or lease_until <= now` is applied as a filter (or a recheck) over the entries it reads.
    expect(plan, "no `or` over the lease").not.toMatch(/\(lease_until IS NULL\) OR/);
  } finally {
    await capture.end();
  }
});
