// Relay drain: a backlog of PENDING outbox rows (valid payloads, inserted with SQL in one transaction) drained to
// JetStream by the running relay, which hears of them as of another replica's commit (the NOTIFY after commit); events/s
// from that commit to the last published_at. Compared with a raw publish of the same number of messages into a stream of the same settings.
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type postgres from "postgres";
import { otherReplica } from "../support/wakeups.ts";
import { insertGrantedEvents } from "./pipeline-load.ts";
import { publishEvents } from "./publish.ts";

export async function seedAndDrainOutbox(args: {
  sql: postgres.Sql;
  count: number;
  prefix: string;
  timeoutMs: number;
  progress: (line: string) => void;
  /** Called once the backlog is committed, before the relay hears of it (where a CPU measurement starts). */
  onCommitted?: () => void | Promise<void>;
  /**
   * The stream the relay publishes to: until its last sequence has moved by `count`, progress is read from its
   * state, which costs the database nothing. Counting the outbox instead walks every index entry the claims left
   * behind since the last vacuum (a heap visit each): 130–170 ms a poll, 15 µs per event drained, measured with
   * relay-drain.ts --statements, taken from the relay it measures.
   */
  stream?: { nc: NatsConnection; name: string };
}): Promise<{ eventsPerSecond: number; seconds: number; published: number }> {
  const { sql, prefix } = args;
  const lastSeq = await streamLastSeq(args.stream);
  const held = await lastSeq();
  await insertGrantedEvents(sql, { prefix, first: 1, count: args.count, sku: "sku-drain" });
  await args.onCommitted?.();
  const committed = Date.now();
  otherReplica(sql).committed({ events: true });
  const deadline = committed + args.timeoutMs;
  while (args.stream && Date.now() < deadline) {
    const published = (await lastSeq()) - held;
    // Events the relay parked as FAILED never reach the stream: counted through outbox_failed_idx (a few rows).
    const [failed] = await sql<{ n: number }[]>`
      select count(*)::int as n from entitlement.outbox_events
      where status = 'FAILED' and aggregate_key like ${`${prefix}-%`}`;
    if (published + (failed?.n ?? 0) >= args.count) break;
    args.progress(`relay drain: ${published}/${args.count} in the stream`);
    await Bun.sleep(250);
  }
  await waitForEmptyOutbox(sql, args.count, deadline, args.progress);
  const [last] = await sql<{ n: number; last_ms: number | null }[]>`
    select count(*)::int as n, extract(epoch from max(published_at))::float8 * 1000 as last_ms
    from entitlement.outbox_events where aggregate_key like ${`${prefix}-%`} and status = 'PUBLISHED'`;
  const published = last?.n ?? 0;
  const seconds = ((last?.last_ms ?? Date.now()) - committed) / 1000;
  return { eventsPerSecond: published / seconds, seconds, published };
}

/** Waits until no event is pending or in flight, or `deadline` passes, saying how far the relay got. */
export async function waitForEmptyOutbox(
  sql: postgres.Sql,
  count: number,
  deadline: number,
  progress: (line: string) => void,
): Promise<void> {
  while (Date.now() < deadline) {
    // One count per partial index the claim reads (new, retries, in flight): a count over both statuses at once is a
    // scan of the whole table, which after the throughput phases holds every earlier event and took CPU from the drain.
    const [row] = await sql<{ n: number }[]>`
      select ((select count(*) from entitlement.outbox_events where status = 'PENDING' and next_retry_at is null)
            + (select count(*) from entitlement.outbox_events where status = 'PENDING' and next_retry_at is not null)
            + (select count(*) from entitlement.outbox_events where status = 'IN_FLIGHT'))::int as n`;
    const left = row?.n ?? 0;
    if (left === 0) return;
    progress(`relay drain: ${count - left}/${count} published`);
    await Bun.sleep(500);
  }
}

/** Reads the stream's last sequence (0 without a stream): it only grows, whatever limits or consumers remove. */
async function streamLastSeq(stream: { nc: NatsConnection; name: string } | undefined): Promise<() => Promise<number>> {
  if (!stream) return async () => 0;
  const jsm = await jetstreamManager(stream.nc);
  return async () => (await jsm.streams.info(stream.name)).state.last_seq;
}

/** The raw yardstick, into its own stream with the entitlement stream's settings; the stream is deleted afterwards. */
export async function rawPublish(
  nc: NatsConnection,
  args: { stream: string; subject: string; count: number; window: number; duplicateWindowMs: number },
): Promise<{ eventsPerSecond: number; seconds: number }> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: args.stream,
    subjects: [args.subject],
    duplicate_window: args.duplicateWindowMs * 1_000_000,
  });
  try {
    const seconds = await publishEvents(nc, {
      subject: args.subject,
      count: args.count,
      window: args.window,
      prefix: "raw",
    });
    return { eventsPerSecond: args.count / seconds, seconds };
  } finally {
    await jsm.streams.delete(args.stream).catch(() => false);
  }
}
