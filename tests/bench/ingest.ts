// Notification ingest: with the service stopped, the durable's backlog is brought to `count` events (the relay drain
// left its events there; raw publishes top it up), then the service starts with delivery off and events/s is measured
// until `count` new rows are in notifications.
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type postgres from "postgres";
import { publishEvents } from "./publish.ts";
import type { Service } from "./stack.ts";

export async function fillBacklog(
  nc: NatsConnection,
  args: { stream: string; durable: string; subject: string; count: number; window: number },
): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const pending = await jsm.consumers
    .info(args.stream, args.durable)
    .then((i) => i.num_pending + i.num_ack_pending)
    .catch(() => 0);
  const missing = args.count - pending;
  if (missing > 0) {
    await publishEvents(nc, { subject: args.subject, count: missing, window: args.window, prefix: "ingest" });
  }
  return Math.max(args.count, pending);
}

export async function measureIngest(args: {
  sql: postgres.Sql;
  /** Notifications to wait for (of `type` only, when given). */
  count: number;
  type?: string;
  start: () => Promise<Service>;
  timeoutMs: number;
  progress: (line: string) => void;
}): Promise<{ eventsPerSecond: number; seconds: number; stored: number; service: Service }> {
  const { sql } = args;
  const ofType = args.type ? sql`and type = ${args.type}` : sql``;
  const [before] = await sql<{ n: number }[]>`
    select count(*)::int as n from notification.notifications where true ${ofType}`;
  const base = before?.n ?? 0;
  const service = await args.start();
  const readyAt = Date.now();
  const deadline = readyAt + args.timeoutMs;
  let stored = 0;
  while (Date.now() < deadline) {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from notification.notifications where true ${ofType}`;
    stored = (row?.n ?? 0) - base;
    if (stored >= args.count) break;
    args.progress(`ingest: ${stored}/${args.count} notifications`);
    await Bun.sleep(250);
  }
  const [span] = await sql<{ first_ms: number; last_ms: number }[]>`
    select extract(epoch from min(created_at))::float8 * 1000 as first_ms,
           extract(epoch from max(created_at))::float8 * 1000 as last_ms
    from notification.notifications where status = 'PENDING' ${ofType}`;
  const first = Math.min(readyAt, span?.first_ms ?? readyAt);
  const seconds = ((span?.last_ms ?? Date.now()) - first) / 1000;
  return { eventsPerSecond: stored / seconds, seconds, stored, service };
}
