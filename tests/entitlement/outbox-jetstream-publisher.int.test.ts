// The relay's own JetStream publish against a real NATS: PubAcks by reply subject, duplicates, a subject no stream
// holds, an ack that never comes, and a relay drain through it with every event in the stream once.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { MsgHdrsImpl } from "@nats-io/transport-node";
import { createJetStreamPublisher } from "../../src/entitlement/work/outbox/jetstream-publisher.ts";
import { waitUntil } from "../support/wait.ts";
import { countByStatus, insertEvents, makeRelay, readStream, useFixture } from "./outbox.helpers.ts";

setDefaultTimeout(60_000);

const f = useFixture("js_publisher");
const body = new TextEncoder().encode("body");

describe("the relay's JetStream publisher", () => {
  test("each publish gets its own PubAck; the message keeps its headers and Nats-Msg-Id", async () => {
    const publisher = createJetStreamPublisher(f.nc, { timeoutMs: 5_000 });
    try {
      const acks = await Promise.all(
        ["a", "b", "c"].map((id) =>
          publisher.publish(f.subject, body, { msgID: `msg-${id}`, headers: MsgHdrsImpl.fromRecord({ k: [id] }) }),
        ),
      );
      expect(acks.map((a) => [a.stream, a.duplicate])).toEqual([
        [f.stream, false],
        [f.stream, false],
        [f.stream, false],
      ]);
      expect(new Set(acks.map((a) => a.seq)).size, "three messages, three sequence numbers").toBe(3);
      const stored = await readStream(f.jsm, f.stream);
      expect(stored.map((m) => [m.headers["Nats-Msg-Id"], m.headers.k])).toEqual([
        ["msg-a", "a"],
        ["msg-b", "b"],
        ["msg-c", "c"],
      ]);
      expect(publisher.pending(), "nothing left waiting").toBe(0);
    } finally {
      publisher.close();
    }
  });

  test("a Nats-Msg-Id the stream already holds is a duplicate, not an error", async () => {
    const publisher = createJetStreamPublisher(f.nc, { timeoutMs: 5_000 });
    try {
      const first = await publisher.publish(f.subject, body, { msgID: "dup-1" });
      const again = await publisher.publish(f.subject, body, { msgID: "dup-1" });
      expect([first.duplicate, again.duplicate]).toEqual([false, true]);
      expect(again.seq).toBe(first.seq);
    } finally {
      publisher.close();
    }
  });

  test("a subject no stream holds fails at once (no responders); an ack that never comes times out", async () => {
    const publisher = createJetStreamPublisher(f.nc, { timeoutMs: 400 });
    const silent = f.nc.subscribe(`${f.stream}_silent.x`, { callback: () => {} });
    try {
      await expect(publisher.publish(`${f.stream}_nowhere.x`, body, { msgID: "n-1" })).rejects.toThrow(/no responders/);
      await f.nc.flush();
      await expect(publisher.publish(`${f.stream}_silent.x`, body, { msgID: "s-1" })).rejects.toThrow(/timeout/i);
      expect(publisher.pending()).toBe(0);
    } finally {
      silent.unsubscribe();
      publisher.close();
    }
  });

  test("closing fails what is still awaited", async () => {
    const publisher = createJetStreamPublisher(f.nc, { timeoutMs: 60_000 });
    const silent = f.nc.subscribe(`${f.stream}_closed.x`, { callback: () => {} });
    await f.nc.flush();
    const waiting = publisher.publish(`${f.stream}_closed.x`, body, { msgID: "c-1" });
    publisher.close();
    await expect(waiting).rejects.toThrow(/closed/);
    silent.unsubscribe();
  });

  test("a relay draining 300 events through it puts each in the stream once", async () => {
    const publisher = createJetStreamPublisher(f.nc, { timeoutMs: 5_000 });
    const relay = makeRelay(f, { js: publisher, settings: { batchSize: 50, concurrency: 2 } });
    const stop = new AbortController();
    const loop = relay.run(stop.signal);
    try {
      const ids = await insertEvents(f.sql, 300);
      await waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === 300, "all 300 PUBLISHED");
      const stored = (await readStream(f.jsm, f.stream)).map((m) => m.headers["Nats-Msg-Id"]);
      expect(stored.sort()).toEqual([...ids].sort());
    } finally {
      stop.abort();
      await loop;
      publisher.close();
    }
  });
});
