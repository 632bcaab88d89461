// The live stream: a player's notifications as they are stored, in seq order; a resume with Last-Event-ID replays
// exactly what was missed and goes on live, with no gap and no repeat even while notifications are being stored;
// `event: reset` when retention removed what was asked for; keep-alives; the end at the token's exp; single-use
// tickets; the per-player and per-process limits; a slow reader closed without holding anyone up.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { uniqueName } from "../../support/infra.ts";
import { waitUntil } from "../../support/wait.ts";
import {
  openStream,
  playerConfig,
  playerToken,
  type Replica,
  range,
  received,
  type SseReader,
  seqsOf,
  startReplica,
  usePlayerStreams,
} from "./harness.ts";

setDefaultTimeout(90_000);

const p = usePlayerStreams("player_stream", 12);
const { f } = p;
let replica: Replica;

const stream = (userId: string, headers: Record<string, string> = {}, query = "", on = () => replica) =>
  p.open(on(), userId, headers, query);

beforeAll(async () => {
  replica = await startReplica({
    config: playerConfig(p.idp, { NOTIFICATION_STREAM_HEARTBEAT: "1s" }),
    sql: f.sql,
    nc: undefined,
  });
});
afterAll(async () => {
  await replica?.stop();
});

describe("live", () => {
  test("sends the player's new notifications in seq order, and no one else's", async () => {
    const player = uniqueName("live");
    const reader = await stream(player);
    expect(reader.status).toBe(200);
    expect(reader.headers.get("content-type")).toStartWith("text/event-stream");
    await replica.store([player, uniqueName("other"), player, player]);
    await received(reader, 3, "three notifications on the stream");
    expect(seqsOf(reader)).toEqual([1, 2, 3]);
    const data = reader.events.map((e) => JSON.parse(e.data) as { seq: number; payload: { user_id: string } });
    expect(
      data.every((d) => d.payload.user_id === player),
      "only the player's own notifications",
    ).toBe(true);
    expect(reader.events.every((e) => e.event === "notification")).toBe(true);
  });

  test("sends keep-alive comments while nothing happens", async () => {
    const reader = await stream(uniqueName("quiet"));
    await waitUntil(() => reader.comments.includes("keep-alive"), "a keep-alive comment", 10_000, 50);
  });

  test("the one keep-alive loop beats every quiet stream, of every player", async () => {
    const player = uniqueName("quiet-many");
    const quiet = await Promise.all([stream(player), stream(player), stream(uniqueName("quiet-other"))]);
    const beats = (r: SseReader) => r.comments.filter((c) => c === "keep-alive").length;
    await waitUntil(() => quiet.every((r) => beats(r) >= 2), "two keep-alives on each quiet stream", 10_000, 50);
  });
});

describe("resume with Last-Event-ID", () => {
  test("replays what came after it (header or query parameter), then goes on live", async () => {
    const player = uniqueName("resume");
    await replica.store([player, player, player, player, player]);
    const byHeader = await stream(player, { "last-event-id": "2" });
    const byQuery = await stream(player, {}, "?last_event_id=2");
    await received(byHeader, 5, "the replay after 2");
    await received(byQuery, 5, "the replay after 2 (query parameter)");
    await replica.store([player]);
    await received(byHeader, 6, "the next notification, live");
    await received(byQuery, 6, "the next notification, live (query parameter)");
    expect(seqsOf(byHeader)).toEqual([3, 4, 5, 6]);
    expect(seqsOf(byQuery)).toEqual([3, 4, 5, 6]);
  });

  test("races notifications being stored: exactly what was missed and what follows, no gap, no repeat", async () => {
    const player = uniqueName("race");
    await replica.store(Array.from({ length: 100 }, () => player));
    // The writer stores until every stream is open, and 20 batches more: the streams resume while rows commit.
    let allOpen = false;
    const writer = (async () => {
      let after = 20;
      while (!allOpen || after-- > 0) await replica.store([player, player, player, player, player]);
    })();
    const resumes = [0, 30, 99, 100];
    const opened: SseReader[] = [];
    for (const from of resumes) {
      opened.push(await stream(player, { "last-event-id": String(from) }));
      await Bun.sleep(5);
    }
    allOpen = true;
    await writer;
    const [row] = await f.sql<{ n: number }[]>`select count(*)::int as n from notifications where user_id = ${player}`;
    const last = row?.n ?? 0;
    expect(last).toBeGreaterThan(200);
    for (const [i, reader] of opened.entries()) {
      await received(reader, last, `the stream resumed after ${resumes[i]} to reach ${last}`);
      expect(seqsOf(reader), `resumed after ${resumes[i]}: every later seq once, in order`).toEqual(
        range((resumes[i] ?? 0) + 1, last),
      );
    }
  });

  test("a seq older than what retention kept gets event: reset first, then what is kept", async () => {
    const player = uniqueName("reset");
    await replica.store(Array.from({ length: 10 }, () => player));
    await f.sql`delete from notifications where user_id = ${player} and seq <= 4`;
    const reader = await stream(player, { "last-event-id": "2" });
    await received(reader, 10, "the kept notifications");
    expect(reader.events[0]?.event).toBe("reset");
    expect(JSON.parse(reader.events[0]?.data ?? "{}")).toEqual({ last_seq: 10 });
    expect(seqsOf(reader)).toEqual(range(5, 10));
    const current = await stream(player, { "last-event-id": "4" });
    await received(current, 10, "a resume from what is kept");
    expect(current.events[0]?.event, "nothing is missing after 4: no reset").toBe("notification");
  });

  test("a seq beyond any given gets event: reset, then the player's next notifications", async () => {
    const player = uniqueName("ahead");
    await replica.store([player, player]);
    const reader = await stream(player, { "last-event-id": "50" });
    await waitUntil(() => reader.events.length > 0, "the reset", 10_000, 20);
    expect(reader.events[0]).toMatchObject({ event: "reset", data: '{"last_seq":2}' });
    await replica.store([player]);
    await received(reader, 3, "the next notification after the reset");
    expect(seqsOf(reader)).toEqual([3]);
  });

  test("a malformed Last-Event-ID is a 400", async () => {
    const reader = await stream(uniqueName("bad"), { "last-event-id": "abc" });
    expect(reader.status).toBe(400);
  });

  test("a resume point past any seq (2^63 and beyond) is a 400 naming the header or parameter, never a 500", async () => {
    const url = `${replica.url}/v1/me/notifications/stream`;
    const authorization = `Bearer ${await playerToken(p.idp, uniqueName("huge"))}`;
    const asked = [
      [{ "last-event-id": "9223372036854775808" }, "", "Last-Event-ID"],
      [{}, "?last_event_id=1e20", "last_event_id"],
      [{}, `?last_event_id=${"9".repeat(40)}`, "last_event_id"],
    ] as const;
    for (const [headers, query, field] of asked) {
      const response = await fetch(`${url}${query}`, { headers: { authorization, ...headers } });
      expect(response.status, field).toBe(400);
      expect(((await response.json()) as { message: string }).message).toStartWith(`${field} must be a seq`);
    }
  });
});

describe("its end", () => {
  test("at the token's exp", async () => {
    const player = uniqueName("expiring");
    const token = await playerToken(p.idp, player, { expiresInS: 2 });
    const reader = await openStream(`${replica.url}/v1/me/notifications/stream`, { authorization: `Bearer ${token}` });
    expect(reader.status).toBe(200);
    let ended = false;
    void reader.ended.then(() => {
      ended = true;
    });
    await waitUntil(() => ended, "the stream to end at the token's exp", 15_000, 50);
  });
});

describe("tickets", () => {
  test("a ticket opens one stream, once; an unknown or used one is a 401", async () => {
    const player = uniqueName("ticket");
    const issued = await fetch(`${replica.url}/v1/me/stream-tickets`, {
      method: "POST",
      headers: { authorization: `Bearer ${await playerToken(p.idp, player)}` },
    });
    expect(issued.status).toBe(201);
    const { ticket, expires_in } = (await issued.json()) as { ticket: string; expires_in: number };
    expect(expires_in).toBe(60);
    const url = `${replica.url}/v1/me/notifications/stream?ticket=${ticket}`;
    const first = await openStream(url);
    p.keep(first);
    expect(first.status).toBe(200);
    await replica.store([player]);
    await received(first, 1, "the ticket's stream to be the player's");
    expect((await openStream(url)).status, "a used ticket").toBe(401);
    expect((await openStream(`${replica.url}/v1/me/notifications/stream?ticket=${"x".repeat(43)}`)).status).toBe(401);
  });
});

describe("limits", () => {
  test("one stream over the per-player limit closes the player's oldest; over the process limit: 503 + Retry-After", async () => {
    const small = await startReplica({
      config: playerConfig(p.idp, { NOTIFICATION_STREAM_MAX_PER_USER: "2", NOTIFICATION_STREAM_MAX: "3" }),
      sql: f.sql,
      nc: undefined,
    });
    try {
      const player = uniqueName("many");
      const oldest = await stream(player, {}, "", () => small);
      let oldestEnded = false;
      void oldest.ended.then(() => {
        oldestEnded = true;
      });
      await stream(player, {}, "", () => small);
      const third = await stream(player, {}, "", () => small);
      expect(third.status).toBe(200);
      await waitUntil(() => oldestEnded, "the player's oldest stream to be closed", 10_000, 20);
      const last = oldest.events.at(-1);
      expect(last?.event, "the oldest is told why it ends, so that it does not reconnect at once").toBe("closed");
      expect(JSON.parse(last?.data ?? "{}")).toEqual({ reason: "stream_limit" });
      expect(small.players.hub.size()).toBe(2);
      await stream(uniqueName("other"), {}, "", () => small);
      const refused = await stream(uniqueName("late"), {}, "", () => small);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("5");
    } finally {
      await small.stop();
    }
  });

  test("a reader that stops reading is closed when its buffer stays full; another stream of the player goes on", async () => {
    const player = uniqueName("slow");
    const hub = replica.players.hub;
    const far = Date.now() + 60_000;
    // Opened on the hub, not over HTTP: nothing ever reads this body, so what is sent waits in its buffer.
    const stuck = await hub.open({ userId: player, resumeAfter: undefined, expiresAtMs: far });
    const reading = await stream(player);
    const closesBefore = await slowReaderCloses();
    for (let i = 0; i < 30; i++) await replica.store(Array.from({ length: 100 }, () => player));
    await received(reading, 3000, "every notification on the stream that reads");
    await waitUntil(async () => (await slowReaderCloses()) > closesBefore, "the slow reader to be closed", 10_000, 20);
    expect(seqsOf(reading)).toEqual(range(1, 3000));
    await stuck.body?.cancel().catch(() => {});
  });
});

async function slowReaderCloses(): Promise<number> {
  const metric = await replica.registry.getSingleMetric("notification_player_stream_closes_total")?.get();
  return metric?.values.find((v) => v.labels.reason === "slow_reader")?.value ?? 0;
}
