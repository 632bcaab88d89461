// What the soak holds its run to, once the load has stopped and everything unanswered was settled: the grants' and
// revokes' ledger (tests/drills/ledger.ts: each 200 stored once, its event published once, one notification per
// recipient, SENT), the sends' ledger (each 202 send one notification per recipient, SENT), every player's stream (each
// seq of the player once, in order), every endpoint (once every delivery row is finished: each notification of its
// types delivered SENT and accepted by the receiver). The pure parts are here so that a unit test holds them.
import type postgres from "postgres";
import { waitUntil } from "../support/wait.ts";

/**
 * How far one player's stream history is from "every seq from 1 to `lastSeq` once, in order": each seq missing
 * counts one, each seq received again or out of order counts one.
 */
export function streamGaps(seen: number[], lastSeq: number): number {
  let next = 1;
  let gaps = 0;
  for (const seq of seen) {
    if (seq === next) next += 1;
    else if (seq < next) gaps += 1;
    else {
      gaps += seq - next;
      next = seq + 1;
    }
  }
  return gaps + Math.max(0, lastSeq - (next - 1));
}

/** Why an endpoint missed notifications: each miss counted once, under the first of these that holds. */
export type EndpointMisses = {
  total: number;
  /** No delivery row to the endpoint: the fan-out never made one. */
  noRow: number;
  /** The row still PENDING or PROCESSING when the soak stopped waiting. */
  unfinished: number;
  /** The row FAILED: the attempts ran out (or the notification was gone). */
  failed: number;
  /** The row SENT, yet the receiver never accepted it. */
  notReceived: number;
};

/**
 * Notifications an endpoint should have got (its types, or every type) that it never accepted. With `rows` (the
 * status of the endpoint's delivery row of each notification), the misses say why; without, each is notReceived.
 */
export function endpointMisses(
  stored: { notification_id: string; type: string }[],
  endpoint: { types?: string[]; accepted: Set<string> },
  rows?: Map<string, string>,
): EndpointMisses {
  const m: EndpointMisses = { total: 0, noRow: 0, unfinished: 0, failed: 0, notReceived: 0 };
  for (const n of stored) {
    if (endpoint.types && !endpoint.types.includes(n.type)) continue;
    const status = rows ? (rows.get(n.notification_id) ?? "none") : "SENT";
    const why =
      status === "none"
        ? "noRow"
        : status === "FAILED"
          ? "failed"
          : status !== "SENT"
            ? "unfinished"
            : endpoint.accepted.has(n.notification_id)
              ? undefined
              : "notReceived";
    if (why === undefined) continue;
    m[why] += 1;
    m.total += 1;
  }
  return m;
}

/** "healthy 0", or "flaky 12 (unfinished 10, FAILED 2)": the endpoint's misses and why, for the run's line. */
export function missesText(name: string, m: EndpointMisses): string {
  const parts = [
    ["unfinished", m.unfinished],
    ["FAILED", m.failed],
    ["no delivery row", m.noRow],
    ["SENT but not received", m.notReceived],
  ].filter(([, n]) => (n as number) > 0);
  return parts.length === 0 ? `${name} ${m.total}` : `${name} ${m.total} (${parts.map((p) => p.join(" ")).join(", ")})`;
}

export type Verdict = {
  minutes: number;
  grants: number;
  sends: number;
  kills: Record<string, number>;
  lost: number;
  duplicated: number;
  streamGaps: number;
  endpointMisses: number;
};

export const passedVerdict = (v: Verdict) =>
  v.lost === 0 && v.duplicated === 0 && v.streamGaps === 0 && v.endpointMisses === 0;

/** The run's last line; its shape is fixed (a script may read it). */
export function verdictLine(v: Verdict): string {
  const total = Object.values(v.kills).reduce((a, b) => a + b, 0);
  const kinds = Object.entries(v.kills)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ");
  return (
    `soak: ${v.minutes} min, ${v.grants} grants, ${v.sends} sends, ${total} kills (${kinds || "none"}), ` +
    `lost ${v.lost}, duplicated ${v.duplicated}, stream gaps ${v.streamGaps}, endpoint misses ${v.endpointMisses}`
  );
}

export type StoredNotification = {
  notification_id: string;
  event_id: string;
  user_id: string;
  type: string;
  status: string;
  seq: number;
};

export const readStored = (sql: postgres.Sql, prefix: string) =>
  sql<StoredNotification[]>`
    select notification_id::text, event_id::text, user_id, type, status, seq::float8 as seq
    from notification.notifications where user_id like ${`${prefix}%`}`;

/** A send the API answered 202: its request id and the distinct recipients it named. */
export type AcknowledgedSend = { requestId: string; userIds: string[] };

/**
 * The sends' ledger: each 202 send has, for each distinct recipient, exactly one notification of `type` carrying its
 * request id, SENT (missing or not SENT: lost; more than one: duplicated), and no notification of `type` exists that
 * no 202 explains (duplicated: a send the soak was never told was taken, or one stored twice).
 */
export function sendLedger(acknowledged: AcknowledgedSend[], stored: StoredNotification[], type: string) {
  const ours = stored.filter((n) => n.type === type);
  const byRequestAndUser = Map.groupBy(ours, (n) => `${n.event_id}|${n.user_id}`);
  const expected = new Set<string>();
  let lost = 0;
  let duplicated = 0;
  const problems: string[] = [];
  const finding = (kind: "lost" | "duplicated", count: number, what: string) => {
    if (kind === "lost") lost += count;
    else duplicated += count;
    if (problems.length < 12) problems.push(`${kind}: ${what}`);
  };
  for (const send of acknowledged) {
    for (const user of new Set(send.userIds)) {
      const pair = `${send.requestId}|${user}`;
      expected.add(pair);
      const own = byRequestAndUser.get(pair) ?? [];
      if (own.length === 0) finding("lost", 1, `no notification of send ${send.requestId} for ${user}`);
      else if (own.some((n) => n.status !== "SENT"))
        finding("lost", 1, `send ${send.requestId} for ${user} is ${own.map((n) => n.status).join("/")}`);
      if (own.length > 1) finding("duplicated", own.length - 1, `${own.length} notifications of ${pair}`);
    }
  }
  for (const [pair, own] of byRequestAndUser)
    if (!expected.has(pair)) finding("duplicated", own.length, `notification that no 202 send explains: ${pair}`);
  return { notifications: ours.length, lost, duplicated, problems };
}

/** Waits until every player's streams reached its last stored seq (or the deadline); returns the gaps then. */
export async function checkStreams(stored: StoredNotification[], seqs: Map<string, number[]>, timeoutMs: number) {
  const last = new Map<string, number>();
  for (const n of stored) last.set(n.user_id, Math.max(last.get(n.user_id) ?? 0, n.seq));
  const behind = () => [...seqs].filter(([p, seen]) => (seen.at(-1) ?? 0) < (last.get(p) ?? 0)).length;
  await waitUntil(() => behind() === 0, "every stream to reach its player's last seq", timeoutMs, 500).catch(() => {});
  let gaps = 0;
  for (const [player, seen] of seqs) gaps += streamGaps(seen, last.get(player) ?? 0);
  return { gaps, behind: behind() };
}

/** The soak's endpoint deliveries not finished yet (PENDING, or PROCESSING under a lease). */
const unfinishedDeliveries = async (sql: postgres.Sql, prefix: string) => {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from notification.webhook_deliveries d
    join notification.notifications n on n.notification_id = d.notification_id
    where d.status in ('PENDING', 'PROCESSING') and n.user_id like ${`${prefix}%`}`;
  return row?.n ?? 0;
};

/** The status of every delivery row of the soak's notifications, by endpoint URL, then notification id. */
async function deliveryRows(sql: postgres.Sql, prefix: string): Promise<Map<string, Map<string, string>>> {
  const rows = await sql<{ url: string; notification_id: string; status: string }[]>`
    select e.url, d.notification_id::text, d.status from notification.webhook_deliveries d
    join notification.webhook_endpoints e on e.endpoint_id = d.endpoint_id
    join notification.notifications n on n.notification_id = d.notification_id
    where n.user_id like ${`${prefix}%`}`;
  const byUrl = new Map<string, Map<string, string>>();
  for (const r of rows) {
    const own = byUrl.get(r.url) ?? new Map<string, string>();
    own.set(r.notification_id, r.status);
    byUrl.set(r.url, own);
  }
  return byUrl;
}

type Endpoint = { name: string; url: string; types?: string[]; accepted: Set<string> };

/**
 * Waits, up to `timeoutMs`, until every endpoint delivery of the soak's notifications is finished (SENT or FAILED),
 * saying every 30 s how many are left and how fast they go; then counts each endpoint's misses: a notification of its
 * types without a delivery row, with one unfinished or FAILED, or SENT but never accepted by the receiver.
 */
export async function checkEndpoints(
  sql: postgres.Sql,
  prefix: string,
  stored: StoredNotification[],
  endpoints: Endpoint[],
  o: { timeoutMs: number; say: (line: string) => void },
) {
  const started = Date.now();
  let mark: { at: number; left: number } | undefined;
  for (;;) {
    const left = await unfinishedDeliveries(sql, prefix).catch(() => undefined);
    if (left === 0 || Date.now() - started >= o.timeoutMs) break;
    if (left !== undefined && !mark) mark = { at: Date.now(), left };
    else if (left !== undefined && mark && Date.now() - mark.at >= 30_000) {
      const perS = Math.round(((mark.left - left) * 1000) / (Date.now() - mark.at));
      o.say(
        `endpoint deliveries: ${left} not finished yet (${perS}/s finished in the last ${Math.round((Date.now() - mark.at) / 1000)} s)`,
      );
      mark = { at: Date.now(), left };
    }
    await Bun.sleep(2_000);
  }
  const rows = await deliveryRows(sql, prefix);
  const misses = endpoints.map((e) => endpointMisses(stored, e, rows.get(e.url) ?? new Map()));
  return {
    drainMs: Date.now() - started,
    total: misses.reduce((a, m) => a + m.total, 0),
    byEndpoint: endpoints.map((e, i) => missesText(e.name, misses[i] as EndpointMisses)),
  };
}
