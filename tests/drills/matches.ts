// Matchmaking load beside the grants: a matchmaker publishing MatchmakingEvents (two players each) straight to
// JetStream, as the original's does, retrying each one under the same Nats-Msg-Id until JetStream acknowledges it.
// Checked afterwards: every acknowledged event has exactly one SENT MatchFound per player, and nothing else exists.
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type postgres from "postgres";
import { matchBytes } from "../notification/helpers.ts";

const SUBJECT = "matchmaking.events";

export type MatchLoad = { stop: () => Promise<Set<string>> };
export type MatchReport = {
  events: number;
  notifications: number;
  lost: number;
  duplicated: number;
  problems: string[];
};

/** Players of the drill's matches: a prefix of their own, so the grant ledger (by the load's prefix) never sees them. */
export const matchUserPrefix = (prefix: string) => `m-${prefix}`;

/**
 * Publishes one match every `pauseMs` until stopped; stop() keeps retrying the one in hand for up to `settleMs` (the
 * stream's duplicate window, 2m, covers a retry whose first try was stored but not acknowledged), then returns the
 * event ids JetStream acknowledged.
 */
export function startMatchLoad(options: { natsUrl: string; prefix: string; pauseMs: number; settleMs: number }) {
  const acked = new Set<string>();
  let stopped = false;
  let deadline = Number.POSITIVE_INFINITY;
  const players = matchUserPrefix(options.prefix);
  const run = async () => {
    const nc: NatsConnection = await connect({
      servers: options.natsUrl.split(","),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    const js = jetstream(nc, { timeout: 2_000 });
    try {
      for (let n = 0; !stopped; n++) {
        const eventId = crypto.randomUUID();
        const body = matchBytes({
          eventId,
          matchId: `${players}${n}`,
          userIds: [`${players}${n}-a`, `${players}${n}-b`],
        });
        while (Date.now() < deadline) {
          const ok = await js.publish(SUBJECT, body, { msgID: eventId }).then(
            () => true,
            () => false,
          );
          if (ok) {
            acked.add(eventId);
            break;
          }
          await Bun.sleep(250);
        }
        await Bun.sleep(options.pauseMs);
      }
    } finally {
      await nc.close().catch(() => {});
    }
  };
  const running = run();
  return {
    stop: async () => {
      stopped = true;
      deadline = Date.now() + options.settleMs;
      await running;
      return acked;
    },
  };
}

type Row = { event_id: string; user_id: string; status: string };

async function matchRows(sql: postgres.Sql, prefix: string): Promise<Row[]> {
  return sql<Row[]>`select event_id::text, user_id, status from notification.notifications
    where type = 'MatchFound' and user_id like ${`${matchUserPrefix(prefix)}%`}`;
}

/** Waits until every acknowledged match has its two SENT notifications; the time taken, or undefined. */
export async function waitForMatches(sql: postgres.Sql, prefix: string, acked: Set<string>, timeoutMs: number) {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    const rows = await matchRows(sql, prefix).catch(() => []);
    const sent = rows.filter((r) => r.status === "SENT" && acked.has(r.event_id)).length;
    if (sent >= acked.size * 2) return Date.now() - started;
    await Bun.sleep(250);
  }
  return undefined;
}

export async function checkMatches(sql: postgres.Sql, prefix: string, acked: Set<string>): Promise<MatchReport> {
  const rows = await matchRows(sql, prefix);
  const problems: string[] = [];
  let lost = 0;
  let duplicated = 0;
  const byEvent = Map.groupBy(rows, (r) => r.event_id);
  for (const id of acked) {
    const own = byEvent.get(id) ?? [];
    const users = new Set(own.map((r) => r.user_id));
    if (users.size < 2) lost += 2 - users.size;
    if (own.length > users.size) duplicated += own.length - users.size;
    const unsent = own.filter((r) => r.status !== "SENT").length;
    lost += unsent;
    if ((users.size < 2 || unsent > 0) && problems.length < 6)
      problems.push(`lost: match ${id} has ${users.size} players notified, ${unsent} not SENT`);
  }
  for (const [id, own] of byEvent) {
    if (acked.has(id)) continue;
    duplicated += own.length;
    if (problems.length < 6) problems.push(`duplicated: notifications of a match never acknowledged: ${id}`);
  }
  return { events: acked.size, notifications: rows.length, lost, duplicated, problems };
}
