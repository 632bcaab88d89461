// The events the pipeline-cost phase feeds the pipeline: a grant's outbox event committed by the harness (the commit is
// where the pipeline starts), one transaction per grant at a fixed rate as an open loop, or a backlog in one statement.
// Each commit is announced as another replica announces its commits (one debounced NOTIFY after commit), so the relay
// wakes as it would for a grant written by a replica it does not share a process with.
// Each event has a fresh user, so its notification is found by user_id.
import type postgres from "postgres";
import { otherReplica } from "../support/wakeups.ts";
import { summarize } from "./stats.ts";

/**
 * One statement that commits `count` pending EntitlementGranted events of `sku` for users `${prefix}-${first}`, …
 * (no wake-up: the caller tells the relays when it wants them to look).
 */
export async function insertGrantedEvents(
  sql: postgres.Sql,
  args: { prefix: string; first: number; count: number; sku: string },
): Promise<void> {
  const { prefix, first, count, sku } = args;
  await sql`
    with s as (select gen_random_uuid() as id, g from generate_series(${first}::int, ${first + count - 1}::int) g)
    insert into entitlement.outbox_events (event_id, event_type, aggregate_key, payload, status, attempt_count, created_at)
    select id, 'EntitlementGranted', ${prefix} || '-' || g || ':' || ${sku},
      jsonb_build_object('event_id', id, 'event_type', 'EntitlementGranted',
        'occurred_at', to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'user_id', ${prefix} || '-' || g, 'stock_keeping_unit', ${sku}::text, 'source', 'bench',
        'source_id', 'p-' || g, 'version', 0, 'trace_id', md5(id::text)),
      'PENDING', 0, now()
    from s`;
}

/** Commits `count` events of sku-pipe for users `${prefix}-${first}`, …, and wakes the relays. */
async function insertEvents(sql: postgres.Sql, prefix: string, first: number, count: number): Promise<void> {
  await insertGrantedEvents(sql, { prefix, first, count, sku: "sku-pipe" });
  otherReplica(sql).committed({ events: true });
}

/** Commits `rate × seconds` events one transaction each; returns each user's commit time (epoch ms). */
export async function commitAtRate(
  sql: postgres.Sql,
  args: { prefix: string; rate: number; seconds: number },
): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  const total = Math.round(args.rate * args.seconds);
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * args.rate) + 1);
    for (; sent < due; sent++) {
      const n = sent;
      inFlight.push(
        insertEvents(sql, args.prefix, n, 1).then(() => void committed.set(`${args.prefix}-${n}`, Date.now())),
      );
    }
    await Bun.sleep(1);
  }
  await Promise.all(inFlight);
  return committed;
}

/** Commits `count` events in one statement; returns the commit time (epoch ms). */
export async function commitBacklog(sql: postgres.Sql, args: { prefix: string; count: number }): Promise<number> {
  await insertEvents(sql, args.prefix, 0, args.count);
  return Date.now();
}

/** Waits until `count` notifications of the prefix are SENT; returns each one's sent_at by user (epoch ms). */
export async function waitUntilSent(
  sql: postgres.Sql,
  args: { prefix: string; count: number; timeoutMs: number; progress: (line: string) => void },
): Promise<Map<string, number>> {
  const deadline = Date.now() + args.timeoutMs;
  for (;;) {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from notification.notifications
      where user_id like ${`${args.prefix}-%`} and status = 'SENT'`;
    const n = row?.n ?? 0;
    if (n >= args.count) break;
    if (Date.now() > deadline) throw new Error(`only ${n} of ${args.count} notifications SENT in time`);
    args.progress(`pipeline: ${n}/${args.count} SENT`);
    await Bun.sleep(100);
  }
  const rows = await sql<{ user_id: string; sent_ms: number }[]>`
    select user_id, extract(epoch from sent_at)::float8 * 1000 as sent_ms from notification.notifications
    where user_id like ${`${args.prefix}-%`} and status = 'SENT'`;
  return new Map(rows.map((r) => [r.user_id, r.sent_ms]));
}

/** commit → sent_at of each event, in ms. */
export function latencies(committed: Map<string, number>, sent: Map<string, number>) {
  const delays = [...committed].flatMap(([user, at]) => {
    const s = sent.get(user);
    return s === undefined ? [] : [s - at];
  });
  return summarize(delays);
}
