// The guarantees of docs/failure-modes.md read from the tables: every accepted change has exactly one outbox event, every event is PUBLISHED and
// has exactly one notification, which is SENT; neither DLQ has rows. Rows are scoped to one scenario by the user-id
// prefix of its load.
import type postgres from "postgres";
import { finalAnswer } from "./client.ts";
import type { Recorded } from "./load.ts";

type EventRow = { event_id: string; user_id: string; sku: string; version: number; status: string; created_at: Date };
type NotificationRow = { event_id: string; status: string };

export type LedgerReport = {
  events: number;
  notifications: number;
  lost: number;
  duplicated: number;
  /**
   * Changes committed (an outbox event) that no 200 answer acknowledged: not a duplicate (one event, one change) but a
   * client that never learned its change took, or an event no request made. Each is also a problem, so it fails.
   */
  unacknowledged: number;
  dlq: number;
  problems: string[];
};

const tripleOf = (user: unknown, sku: unknown, version: unknown) => `${user}|${sku}|${Number(version)}`;

/** `otherTypes`: notification types that are no event's (the send API's), left to their own check. */
async function readRows(sql: postgres.Sql, prefix: string, otherTypes: string[] = []) {
  const pattern = `${prefix}%`;
  const events = await sql<EventRow[]>`
    select event_id, payload->>'user_id' as user_id, payload->>'stock_keeping_unit' as sku,
           (payload->>'version')::float8 as version, status, created_at
    from entitlement.outbox_events where payload->>'user_id' like ${pattern}`;
  const notifications = await sql<NotificationRow[]>`
    select event_id, status from notification.notifications
    where user_id like ${pattern} and type <> all(${otherTypes}::text[])`;
  // Versions start at 0 and move by one per transition, each with one outbox event and one audit row. Counted by
  // grouping each table once and joining (outbox_events has no index on aggregate_key: a count per entitlement would
  // scan it once per row, hours for a half-hour soak). aggregate_key is "user_id:stock_keeping_unit".
  const pairs = await sql<{ pair: string; version: number; events: number; audits: number }[]>`
    with o as (
      select aggregate_key, count(*)::int as n from entitlement.outbox_events
      where aggregate_key like ${pattern} group by aggregate_key
    ), a as (
      select user_id, stock_keeping_unit, count(*)::int as n from entitlement.entitlement_audit
      where user_id like ${pattern} group by user_id, stock_keeping_unit
    )
    select e.user_id || '/' || e.stock_keeping_unit as pair, e.version::float8 as version,
      coalesce(o.n, 0) as events, coalesce(a.n, 0) as audits
    from entitlement.entitlements e
    left join o on o.aggregate_key = e.user_id || ':' || e.stock_keeping_unit
    left join a on a.user_id = e.user_id and a.stock_keeping_unit = e.stock_keeping_unit
    where e.user_id like ${pattern}`;
  const [dlq] = await sql<{ n: number; nats: number }[]>`
    select (select count(*)::int from notification.notification_dlq) as n,
           (select count(*)::int from notification.notification_nats_dlq) as nats`;
  return { events, notifications, pairs, dlq: (dlq?.n ?? 0) + (dlq?.nats ?? 0) };
}

/** Polls until every event of the prefix is PUBLISHED and has a SENT notification; returns the time taken, or undefined. */
export async function waitForQuiescence(
  sql: postgres.Sql,
  prefix: string,
  expectedEvents: number,
  timeoutMs: number,
): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    try {
      const { events, notifications } = await readRows(sql, prefix);
      const sent = new Set(notifications.filter((n) => n.status === "SENT").map((n) => n.event_id));
      const done = events.every((e) => e.status === "PUBLISHED" && sent.has(e.event_id));
      if (done && events.length >= expectedEvents && notifications.every((n) => n.status === "SENT"))
        return Date.now() - started;
    } catch {}
    await Bun.sleep(250);
  }
  return undefined;
}

/**
 * Resolves with the milliseconds from `since` until every event committed before `since` has a SENT notification
 * (the pipeline caught up with the fault), or undefined after `timeoutMs`.
 */
export async function watchCatchUp(sql: postgres.Sql, prefix: string, since: Date, timeoutMs: number) {
  while (Date.now() - since.getTime() < timeoutMs) {
    try {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from entitlement.outbox_events o
        where o.payload->>'user_id' like ${`${prefix}%`} and o.created_at <= ${since}
          and not exists (select 1 from notification.notifications n where n.event_id = o.event_id and n.status = 'SENT')`;
      if (row?.n === 0) return Date.now() - since.getTime();
    } catch {}
    await Bun.sleep(200);
  }
  return undefined;
}

/**
 * The slowest event of the scenario from its commit to its notification SENT, in ms: what a user waits when the fault
 * hits, e.g. the events a killed Notification held until the ack wait gave them to its successor.
 */
export async function slowestSent(sql: postgres.Sql, prefix: string): Promise<number | undefined> {
  const [row] = await sql<{ ms: number | null }[]>`
    select max(extract(epoch from n.sent_at - o.created_at) * 1000)::float8 as ms
    from entitlement.outbox_events o join notification.notifications n on n.event_id = o.event_id
    where o.payload->>'user_id' like ${`${prefix}%`} and n.status = 'SENT'`;
  return row?.ms ?? undefined;
}

type Finding = (kind: "lost" | "duplicated" | "unacknowledged", count: number, what: string) => void;

/**
 * The outbox against the 200 answers, by (user, item, version): a 200 without its event is lost; two events of one
 * triple, or two 200s, duplicated; an event that no 200 explains is unacknowledged (see LedgerReport).
 */
export function checkEvents(acceptedTriples: string[], eventTriples: string[], finding: Finding): void {
  const accepted = Map.groupBy(acceptedTriples, (t) => t);
  const events = Map.groupBy(eventTriples, (t) => t);
  for (const [t, answers] of accepted) {
    if (answers.length > 1) finding("duplicated", answers.length - 1, `${answers.length} answers of 200 for ${t}`);
    if (!events.has(t)) finding("lost", 1, `accepted change without an outbox event: ${t}`);
  }
  for (const [t, list] of events) {
    if (list.length > 1) finding("duplicated", list.length - 1, `${list.length} outbox events for ${t}`);
    // After settling (every 5xx, 429 and unanswered request retried with its key), every committed change has been
    // answered 200 on some attempt; an event nobody was told about is a change the client does not know it made.
    if (!accepted.has(t)) finding("unacknowledged", 1, `outbox event that no 200 answer explains: ${t}`);
  }
}

/** Each entitlement at version v went through v + 1 transitions: as many outbox events and audit rows, no more. */
function checkTransitions(
  pairs: { pair: string; version: number; events: number; audits: number }[],
  finding: Finding,
) {
  for (const p of pairs) {
    const transitions = p.version + 1;
    for (const [what, count] of [
      ["outbox events", p.events],
      ["audit rows", p.audits],
    ] as const) {
      if (count < transitions) finding("lost", transitions - count, `${p.pair} at v${p.version} has ${count} ${what}`);
      if (count > transitions)
        finding("duplicated", count - transitions, `${p.pair} at v${p.version} has ${count} ${what}`);
    }
  }
}

export async function checkLedger(
  sql: postgres.Sql,
  prefix: string,
  accepted: Recorded[],
  otherTypes: string[] = [],
): Promise<LedgerReport> {
  const { events, notifications, pairs, dlq } = await readRows(sql, prefix, otherTypes);
  const problems: string[] = [];
  const counts = { lost: 0, duplicated: 0, unacknowledged: 0 };
  const finding: Finding = (kind, count, what) => {
    counts[kind] += count;
    // Every finding is a problem (at most 12 listed): a drill with any problem fails, an unacknowledged change too.
    if (problems.length < 12) problems.push(`${kind}: ${what}`);
  };
  const acceptedTriples = accepted.map((r) => {
    const b = finalAnswer(r)?.body ?? {};
    return tripleOf(b.user_id, b.stock_keeping_unit, b.version);
  });
  checkEvents(
    acceptedTriples,
    events.map((e) => tripleOf(e.user_id, e.sku, e.version)),
    finding,
  );
  const notificationsByEvent = Map.groupBy(notifications, (n) => n.event_id);
  const eventIds = new Set(events.map((e) => e.event_id));
  for (const n of notifications) {
    // A notification of an event the outbox does not hold: e.g. an event lost in a failover but already consumed.
    if (!eventIds.has(n.event_id))
      finding("duplicated", 1, `notification of an event not in the outbox: ${n.event_id}`);
  }
  for (const e of events) {
    const own = notificationsByEvent.get(e.event_id) ?? [];
    if (own.length > 1) finding("duplicated", own.length - 1, `${own.length} notifications for event ${e.event_id}`);
    const why =
      e.status !== "PUBLISHED"
        ? `outbox event ${e.status}`
        : own.length === 0
          ? "no notification"
          : own.some((n) => n.status !== "SENT")
            ? `notification ${own.map((n) => n.status).join("/")}`
            : undefined;
    if (why) finding("lost", 1, `${why}: ${e.event_id} ${tripleOf(e.user_id, e.sku, e.version)}`);
  }
  checkTransitions(pairs, finding);
  if (dlq > 0) problems.push(`${dlq} rows in notification_dlq / notification_nats_dlq`);
  return { events: events.length, notifications: notifications.length, ...counts, dlq, problems };
}
