// What the soak holds its run to, once the load has stopped and everything unanswered was settled: the grants' and
// revokes' ledger (tests/drills/ledger.ts: each 200 stored once, its event published once, one notification per
// recipient, SENT), the sends' ledger (each 202 send one notification per recipient, SENT), every player's stream (each seq of the player once, in order), every endpoint (each notification
// of its types at least once). The pure parts are here so that a unit test holds them.
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

/** Notifications an endpoint should have got (its types, or every type) that it never accepted. */
export function endpointMisses(
  stored: { notification_id: string; type: string }[],
  endpoint: { types?: string[]; accepted: Set<string> },
): number {
  const wanted = stored.filter((n) => !endpoint.types || endpoint.types.includes(n.type));
  return wanted.filter((n) => !endpoint.accepted.has(n.notification_id)).length;
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

/** Waits until each endpoint accepted every notification of its types (or the deadline); returns the misses then. */
export async function checkEndpoints(
  stored: StoredNotification[],
  endpoints: { name: string; types?: string[]; accepted: Set<string> }[],
  timeoutMs: number,
) {
  const misses = () => endpoints.map((e) => endpointMisses(stored, e));
  await waitUntil(
    () => misses().every((m) => m === 0),
    "every endpoint to accept its notifications",
    timeoutMs,
    500,
  ).catch(() => {});
  const now = misses();
  return { total: now.reduce((a, b) => a + b, 0), byEndpoint: endpoints.map((e, i) => `${e.name} ${now[i]}`) };
}
