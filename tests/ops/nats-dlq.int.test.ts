// NATS DLQ list and replay on a real JetStream stream (a unique name per run, deleted afterwards): the original message
// is fetched by sequence and republished with its payload and headers under a new Nats-Msg-Id.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { natsDlqSubcommand, printNatsDlq, replayNatsDlq } from "../../src/notification/ops/nats-dlq.ts";
import type { Sql } from "../../src/shared/db.ts";
import { type DatabaseFixture, natsUrl, openTestDatabase, uniqueName } from "../support/infra.ts";

let f: DatabaseFixture;
let sql: Sql;
let nc: NatsConnection;
let jsm: JetStreamManager;
const stream = uniqueName("ops-replay");
const subject = `${stream}.events`;

beforeAll(async () => {
  f = await openTestDatabase("ops_nats_dlq", { service: "notification", poolMax: 2 });
  sql = f.sql;
  nc = await connect({ servers: await natsUrl() });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [subject], duplicate_window: 120_000_000_000 });
});
afterAll(async () => {
  await jsm?.streams.delete(stream).catch(() => {});
  await nc?.close();
  await f?.close();
});

function capture() {
  const lines: string[] = [];
  return { lines, out: (line: string) => lines.push(line) };
}

async function publishOriginal(eventId: string): Promise<number> {
  const h = headers();
  h.set("event_type", "EntitlementGranted");
  h.set("aggregate_key", "user-9:sku-1");
  h.set("trace_id", "trace-42");
  const ack = await jetstream(nc).publish(subject, new TextEncoder().encode(`payload-${eventId}`), {
    msgID: eventId,
    headers: h,
  });
  await sql`
    insert into notification_nats_dlq (stream_seq, stream, consumer, kind, deliveries)
    values (${ack.seq}, ${stream}, 'notification-entitlement-consumer', 'MAX_DELIVERIES', 10)`;
  return ack.seq;
}

describe("nats-dlq replay", () => {
  test("republishes payload and headers under a new Nats-Msg-Id, sets replayed_at, refuses a second run", async () => {
    const eventId = crypto.randomUUID();
    const seq = await publishOriginal(eventId);
    const jet = { js: jetstream(nc), jsm };
    const options = { streamSeq: seq, force: false, stream };

    const first = capture();
    expect(await replayNatsDlq({ sql, out: first.out }, jet, options)).toBe(0);
    expect(first.lines[0]).toContain(`replayed stream_seq ${seq} of ${stream} to ${subject}`);
    const info = await jsm.streams.info(stream);
    expect(info.state.messages).toBe(2);
    const copy = await jsm.streams.getMessage(stream, { seq: info.state.last_seq });
    expect(copy?.subject).toBe(subject);
    expect(new TextDecoder().decode(copy?.data)).toBe(`payload-${eventId}`);
    expect(copy?.header.get("Nats-Msg-Id")).toBe(`${eventId}-replay-${seq}`);
    expect(copy?.header.get("event_type")).toBe("EntitlementGranted");
    expect(copy?.header.get("aggregate_key")).toBe("user-9:sku-1");
    expect(copy?.header.get("trace_id")).toBe("trace-42");
    const [row] =
      await sql`select replayed_at from notification_nats_dlq where stream = ${stream} and stream_seq = ${seq}`;
    expect(row?.replayed_at).toBeInstanceOf(Date);

    const second = capture();
    expect(await replayNatsDlq({ sql, out: second.out }, jet, options)).toBe(0);
    expect(second.lines[0]).toContain("already replayed");
    expect((await jsm.streams.info(stream)).state.messages).toBe(2);

    const forced = capture();
    expect(await replayNatsDlq({ sql, out: forced.out }, jet, { ...options, force: true })).toBe(0);
    expect((await jsm.streams.info(stream)).state.messages).toBe(3);
  });

  test("an unknown stream_seq and a message gone from the stream are errors", async () => {
    const jet = { js: jetstream(nc), jsm };
    const out = capture();
    expect(await replayNatsDlq({ sql, out: out.out }, jet, { streamSeq: 999_999, force: false, stream })).toBe(1);

    const seq = await publishOriginal(crypto.randomUUID());
    await jsm.streams.deleteMessage(stream, seq);
    const gone = capture();
    expect(await replayNatsDlq({ sql, out: gone.out }, jet, { streamSeq: seq, force: false, stream })).toBe(1);
    expect(gone.lines.join("\n")).toContain("cannot");
  });
});

describe("nats-dlq list and the command", () => {
  test("lists rows; the command replays through its own connections", async () => {
    const seq = await publishOriginal(crypto.randomUUID());
    const out = capture();
    expect(await printNatsDlq({ sql, out: out.out }, { limit: 1000 })).toBe(0);
    expect(out.lines.find((l) => l.includes(`stream_seq=${seq} `))).toContain(
      "kind=MAX_DELIVERIES deliveries=10 replayed=no",
    );

    const env = { DATABASE_URL: f.db.url, NATS_URL: await natsUrl() };
    for (const args of [
      [],
      ["replay"],
      ["replay", "0"],
      ["replay", "x"],
      ["replay", "1", "--force", "--force"],
      ["replay", "1", "--stream"],
      ["replay", "1", "--stream", "bad name"],
      ["list", "-n"],
    ]) {
      expect(await natsDlqSubcommand(env).run(args), `nats-dlq ${args.join(" ")} is a usage error`).toBe(2);
    }
    // The row belongs to this test's stream: under the configured default stream there is no such message.
    expect(await natsDlqSubcommand(env).run(["replay", String(seq)])).toBe(1);
    expect(await natsDlqSubcommand(env).run(["replay", String(seq), "--stream", stream])).toBe(0);
    expect(await natsDlqSubcommand({ ...env, NOTIFICATION_NATS_STREAM: stream }).run(["replay", String(seq)])).toBe(0);
    expect(await natsDlqSubcommand(env).run(["list"])).toBe(0);
  });
});
