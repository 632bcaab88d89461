// A stored batch wakes the streams of each of its players at once. Their reads are gathered: one statement answers
// many streams (each after its own position, a page each at most), instead of one statement per stream queued on the
// pool, which made the last player of a 1,000-recipient send wait for a thousand round trips.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { uniqueName } from "../../support/infra.ts";
import { waitUntil } from "../../support/wait.ts";
import {
  playerConfig,
  type Replica,
  range,
  type SseReader,
  seqsOf,
  startReplica,
  usePlayerStreams,
} from "./harness.ts";

setDefaultTimeout(120_000);

const p = usePlayerStreams("player_stream_reads", 4);
const { f } = p;
const PLAYERS = 120;
let replica: Replica;
let counted: postgres.Sql;
/** Every statement the replica ran that reads a player's notifications after a seq. */
const reads: string[] = [];

beforeAll(async () => {
  counted = postgres(f.db.url, {
    max: 8,
    onnotice: () => {},
    connection: { search_path: "notification" },
    debug: (_connection, query) => {
      if (/\bseq > /.test(query)) reads.push(query);
    },
  });
  replica = await startReplica({ config: playerConfig(p.idp), sql: counted as never, nc: undefined });
});
afterAll(async () => {
  await replica?.stop();
  await counted?.end({ timeout: 5 });
});

const streamOf = (player: string) => p.open(replica, player);

test("a batch stored for many streaming players is read for all of them in a few statements, each stream its own rows", async () => {
  const players = Array.from({ length: PLAYERS }, () => uniqueName("batch"));
  const streams = await Promise.all(players.map(streamOf));
  // A second stream of the first player, behind by one notification: its read starts from its own position.
  await replica.store([players[0] as string]);
  await waitUntil(() => seqsOf(streams[0] as SseReader).length === 1, "the first player's first event");
  const behind = await streamOf(players[0] as string);
  const before = reads.length;
  await replica.store([...players, players[0] as string]);
  await waitUntil(
    () => streams.every((s, i) => seqsOf(s).length === (i === 0 ? 3 : 1)) && seqsOf(behind).length === 2,
    "every stream's events",
    30_000,
    20,
  );
  expect(seqsOf(streams[0] as SseReader)).toEqual(range(1, 3));
  expect(seqsOf(behind)).toEqual([2, 3]);
  for (const s of streams.slice(1)) expect(seqsOf(s)).toEqual([1]);
  for (const [i, s] of streams.entries()) {
    const data = s.events.filter((e) => e.event === "notification").map((e) => JSON.parse(e.data).payload.user_id);
    expect(new Set(data)).toEqual(new Set([players[i]]));
  }
  expect(reads.length - before, "statements that read the streams' rows").toBeLessThanOrEqual(6);
});
