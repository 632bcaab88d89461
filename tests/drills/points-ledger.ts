// The points ledger of one scenario (docs/api.md, docs/failure-modes.md), read from the tables after the load settled: every accepted
// reservation (201, or settled by replaying its Idempotency-Key) is DONE exactly once, never early, with one
// point_transactions row, one EXECUTE audit row, one PointsGranted outbox event (PUBLISHED) and one PointsGranted
// notification (SENT); each user's balance is the sum of their executed reservations; nothing else was written.
import type postgres from "postgres";
import type { Answer } from "./client.ts";
import { definite, type PointsLoad, settleReservations } from "./points-load.ts";

export type PointsReport = {
  /** Accepted reservations: the final answer (own or settled) was 201. */
  reservations: number;
  /** Of those, the ones whose own request got no definite answer and were settled by a replay. */
  settled: number;
  /** Replays sent during the load (the same key and body), each answered as the original was. */
  replays: number;
  done: number;
  transactions: number;
  notifications: number;
  users: number;
  /** Users whose balance equals the sum of their executed reservations. */
  exactBalances: number;
  lost: number;
  duplicated: number;
  problems: string[];
};

type ReservationRow = {
  reservation_id: string;
  user_id: string;
  point_amount: number;
  status: string;
  early: boolean;
  transactions: number;
  audits: number;
};
type EventRow = { event_id: string; reservation_id: string; status: string };

async function readRows(sql: postgres.Sql, prefix: string) {
  const pattern = `${prefix}%`;
  const reservations = await sql<ReservationRow[]>`
    select r.reservation_id::text, r.user_id, r.point_amount::float8 as point_amount, r.status,
           coalesce(r.executed_at < r.execute_at, false) as early,
           (select count(*)::int from entitlement.point_transactions t where t.reservation_id = r.reservation_id)
             as transactions,
           (select count(*)::int from entitlement.point_audit a
             where a.reservation_id = r.reservation_id and a.action = 'EXECUTE') as audits
    from entitlement.point_reservations r where r.user_id like ${pattern}`;
  const [orphans] = await sql<{ n: number }[]>`
    select count(*)::int as n from entitlement.point_transactions t where t.user_id like ${pattern}
      and not exists (select 1 from entitlement.point_reservations r where r.reservation_id = t.reservation_id)`;
  const balances = await sql<{ user_id: string; balance: number }[]>`
    select user_id, balance::float8 as balance from entitlement.point_balances where user_id like ${pattern}`;
  const events = await sql<EventRow[]>`
    select event_id::text, payload->>'reservation_id' as reservation_id, status from entitlement.outbox_events
    where event_type = 'PointsGranted' and payload->>'user_id' like ${pattern}`;
  const notifications = await sql<EventRow[]>`
    select event_id::text, payload_json->>'reservation_id' as reservation_id, status from notification.notifications
    where type = 'PointsGranted' and user_id like ${pattern}`;
  return { reservations, orphans: orphans?.n ?? 0, balances, events, notifications };
}

/** Until every reservation of the prefix is DONE and every PointsGranted is PUBLISHED with a SENT notification. */
async function waitForPoints(sql: postgres.Sql, prefix: string, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    try {
      const { reservations, events, notifications } = await readRows(sql, prefix);
      const sent = new Set(notifications.filter((n) => n.status === "SENT").map((n) => n.event_id));
      if (
        reservations.every((r) => r.status === "DONE") &&
        events.length >= reservations.length &&
        events.every((e) => e.status === "PUBLISHED" && sent.has(e.event_id))
      )
        return true;
    } catch {}
    await Bun.sleep(250);
  }
  return false;
}

type Rows = Awaited<ReturnType<typeof readRows>>;
type Accepted = Map<string, { user: string; amount: number }>;
/** Records one finding: a lost or duplicated one is counted, and the first twelve of any kind are told. */
type Finding = (kind: "lost" | "duplicated" | "wrong", what: string, count?: number) => void;

/** The findings of one check, as problems and the lost and duplicated counts, and the `finding` that records one. */
function collectFindings() {
  const found = { problems: [] as string[], lost: 0, duplicated: 0 };
  const finding: Finding = (kind, what, count = 1) => {
    if (kind === "lost") found.lost += count;
    if (kind === "duplicated") found.duplicated += count;
    if (found.problems.length < 12) found.problems.push(`points ${kind}: ${what}`);
  };
  return { found, finding };
}

/** Settles the unanswered reservations, waits for their execution and delivery, then holds the tables to the answers. */
export async function checkPoints(
  sql: postgres.Sql,
  load: PointsLoad,
  o: { prefix: string; urls: () => string[]; token: string; timeoutMs: number; latencyBoundMs: number },
): Promise<PointsReport> {
  const deadline = Date.now() + o.timeoutMs;
  await settleReservations(load, { ...o, deadline });
  const { found, finding } = collectFindings();
  const accepted = acceptedReservations(load, o.latencyBoundMs, finding);
  if (!(await waitForPoints(sql, o.prefix, Math.max(deadline, Date.now() + 1_000))))
    found.problems.push("points not all DONE, PUBLISHED and notified in time");
  const rows = await readRows(sql, o.prefix);
  const expected = checkAccepted(accepted, rows, finding);
  checkUnexplained(accepted, rows, finding);
  const actual = new Map(rows.balances.map((b) => [b.user_id, b.balance]));
  const exactBalances = checkBalances(expected, actual, finding);
  const byId = new Map(rows.reservations.map((r) => [r.reservation_id, r]));
  const done = [...accepted.keys()].filter((id) => byId.get(id)?.status === "DONE").length;
  return {
    reservations: accepted.size,
    settled: load.reservations.filter((r) => !definite(r.answer) && r.settled?.status === 201).length,
    replays: load.replays.length,
    done,
    transactions: rows.reservations.reduce((sum, r) => sum + r.transactions, 0) + rows.orphans,
    notifications: rows.notifications.length,
    users: new Set([...expected.keys(), ...actual.keys()]).size,
    exactBalances,
    lost: found.lost,
    duplicated: found.duplicated,
    problems: found.problems,
  };
}

/** The reservations answered 201 (by their own answer or a settling replay), by id; slow or wrong answers are findings. */
function acceptedReservations(load: PointsLoad, latencyBoundMs: number, finding: Finding): Accepted {
  const accepted: Accepted = new Map();
  for (const r of load.reservations) {
    const a: Answer | undefined = definite(r.answer) ? r.answer : r.settled;
    if (r.ms > latencyBoundMs) finding("wrong", `reservation ${r.key} took ${Math.round(r.ms)}ms`);
    if (!a) finding("wrong", `reservation ${r.key} never settled (${r.error ?? r.answer?.status})`);
    else if (a.status !== 201) finding("wrong", `reservation ${r.key}: ${a.status} ${a.text.slice(0, 160)}`);
    else accepted.set(String(a.body.reservation_id), { user: r.body.user_id, amount: r.body.point_amount });
  }
  for (const p of load.replays) {
    if (p.ms > latencyBoundMs) finding("wrong", `replay of ${p.original.key} took ${Math.round(p.ms)}ms`);
    const first = p.original.answer as Answer;
    if (definite(p.answer) && (p.answer.status !== first.status || !Bun.deepEquals(p.answer.body, first.body)))
      finding(
        "wrong",
        `replay of ${p.original.key}: ${p.answer.status} ${p.answer.text.slice(0, 160)}, not the original`,
      );
  }
  return accepted;
}

/** Every accepted reservation DONE once, on time, with one row of each kind, all sent; the balance each user is owed. */
function checkAccepted(accepted: Accepted, rows: Rows, finding: Finding): Map<string, number> {
  const byId = new Map(rows.reservations.map((r) => [r.reservation_id, r]));
  const events = Map.groupBy(rows.events, (e) => e.reservation_id);
  const notified = Map.groupBy(rows.notifications, (n) => n.reservation_id);
  const expected = new Map<string, number>();
  for (const [id, { user, amount }] of accepted) {
    expected.set(user, (expected.get(user) ?? 0) + amount);
    const row = byId.get(id);
    if (row?.status !== "DONE") finding("lost", `accepted reservation ${id} is ${row?.status ?? "missing"}`);
    if (row?.early) finding("wrong", `reservation ${id} executed before its execute_at`);
    for (const [what, count] of [
      ["point_transactions rows", row?.transactions ?? 0],
      ["EXECUTE audit rows", row?.audits ?? 0],
      ["PointsGranted events", events.get(id)?.length ?? 0],
      ["PointsGranted notifications", notified.get(id)?.length ?? 0],
    ] as const) {
      if (count === 0) finding("lost", `reservation ${id} has no ${what}`);
      if (count > 1) finding("duplicated", `reservation ${id} has ${count} ${what}`, count - 1);
    }
    const unsent = [...(events.get(id) ?? []), ...(notified.get(id) ?? [])].filter(
      (e) => e.status !== "PUBLISHED" && e.status !== "SENT",
    );
    if (unsent.length) finding("lost", `reservation ${id}: ${unsent.map((e) => e.status).join("/")}`);
  }
  return expected;
}

/** Nothing written that no accepted reservation explains: reservations, transactions, notifications. */
function checkUnexplained(accepted: Accepted, rows: Rows, finding: Finding): void {
  const eventIds = new Set(rows.events.map((e) => e.event_id));
  for (const r of rows.reservations)
    if (!accepted.has(r.reservation_id)) finding("duplicated", `reservation ${r.reservation_id} that no 201 explains`);
  if (rows.orphans)
    finding("duplicated", `${rows.orphans} point_transactions rows without a reservation`, rows.orphans);
  for (const n of rows.notifications)
    if (!eventIds.has(n.event_id)) finding("duplicated", `PointsGranted notification of no outbox event ${n.event_id}`);
}

/** Each user's balance against the sum of their executed reservations; returns how many are exact. */
function checkBalances(expected: Map<string, number>, actual: Map<string, number>, finding: Finding): number {
  let exactBalances = 0;
  for (const user of new Set([...expected.keys(), ...actual.keys()])) {
    const want = expected.get(user) ?? 0;
    const got = actual.get(user) ?? 0;
    if (got === want) exactBalances += 1;
    else
      finding(
        got > want ? "duplicated" : "lost",
        `balance of ${user} is ${got}, its executed reservations sum to ${want}`,
      );
  }
  return exactBalances;
}
