// A resume that has more to send than the stream's buffer holds: a reader that keeps reading gets every notification,
// in order, however large they are and however small the buffer; only a reader that takes nothing while the buffer is
// full is closed as slow_reader.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { uniqueName } from "../../support/infra.ts";
import { waitUntil } from "../../support/wait.ts";
import { playerConfig, type Replica, range, seqsOf, startReplica, usePlayerStreams } from "./harness.ts";

setDefaultTimeout(120_000);

const p = usePlayerStreams("player_catch_up", 8);
const { f } = p;
/** The smallest NOTIFICATION_STREAM_BUFFER_BYTES allowed (players/config.ts). */
const SMALLEST_BUFFER = "4096";
/** Each notification's frame is larger than the smallest buffer and than a hundredth of the default one. */
const LARGE = { blob: "x".repeat(6 * 1024) };
const COUNT = 120;

const replicas: Replica[] = [];

async function replicaWith(env: Record<string, string>): Promise<Replica> {
  const replica = await startReplica({ config: playerConfig(p.idp, env), sql: f.sql, nc: undefined });
  replicas.push(replica);
  return replica;
}

async function storeLarge(replica: Replica, player: string): Promise<void> {
  for (let i = 0; i < COUNT; i += 20) {
    await replica.store(
      Array.from({ length: 20 }, () => player),
      { silently: true, extra: LARGE },
    );
  }
}

async function closesFor(replica: Replica, reason: string): Promise<number> {
  const metric = await replica.registry.getSingleMetric("notification_player_stream_closes_total")?.get();
  return metric?.values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

afterAll(async () => {
  for (const r of replicas) await r.stop();
});

describe("a resume larger than the buffer", () => {
  for (const [name, env] of [
    ["the default buffer", {}],
    ["the smallest buffer", { NOTIFICATION_STREAM_BUFFER_BYTES: SMALLEST_BUFFER }],
  ] as const) {
    test(`${COUNT} notifications of 6 KB resumed from 0 reach a reader that keeps reading, at ${name}`, async () => {
      const replica = await replicaWith(env);
      const player = uniqueName("large");
      await storeLarge(replica, player);
      const reader = await p.open(replica, player, { "last-event-id": "0" });
      expect(reader.status).toBe(200);
      let ended = false;
      void reader.ended.then(() => {
        ended = true;
      });
      await waitUntil(() => ended || seqsOf(reader).length >= COUNT, "the whole resume, or the stream's end");
      expect(seqsOf(reader), "every notification once, in seq order, on a stream that stays open").toEqual(
        range(1, COUNT),
      );
      expect(ended, "the stream is still open after the resume").toBe(false);
      const payloads = reader.events.map((e) => JSON.parse(e.data) as { payload: { blob?: string } });
      expect(
        payloads.every((p) => p.payload.blob === LARGE.blob),
        "each notification whole",
      ).toBe(true);
      expect(await closesFor(replica, "slow_reader"), "no reader of this replica was too slow").toBe(0);
    });
  }
});

describe("a reader that never reads", () => {
  test("is closed as slow_reader once its buffer stays full for a heartbeat", async () => {
    const replica = await replicaWith({
      NOTIFICATION_STREAM_BUFFER_BYTES: SMALLEST_BUFFER,
      NOTIFICATION_STREAM_HEARTBEAT: "1s",
    });
    const player = uniqueName("stuck");
    await storeLarge(replica, player);
    // Opened on the hub, not over HTTP: nothing ever reads this body, so what is sent waits in its buffer.
    const stuck = await replica.players.hub.open({
      userId: player,
      resumeAfter: "0",
      expiresAtMs: Date.now() + 60_000,
    });
    await waitUntil(async () => (await closesFor(replica, "slow_reader")) === 1, "the stuck stream closed as slow");
    expect(replica.players.hub.size(), "the slow stream is gone from the hub").toBe(0);
    await stuck.body?.cancel().catch(() => {});
  });
});
