// Replicas of Notification's players' side for tests: the HTTP app with the /v1/me/ routes listening on a port of
// 127.0.0.1, its hub of live streams and the fan-out over the test NATS; optionally the event consumer too. Players get
// access tokens from the in-process OpenID Connect provider (tests/support/idp.ts), signed by its key for the players'
// audience, and read their streams with a small Server-Sent Events reader.
import { afterAll, beforeAll } from "bun:test";
import type { NatsConnection } from "@nats-io/transport-node";
import type { NotificationConfig } from "../../../src/notification/config.ts";
import { createPlayers, type Players } from "../../../src/notification/features/players/setup.ts";
import { type StoreOutcome, storeEvents } from "../../../src/notification/intake/consumer/batch.ts";
import type { ConsumerHealth } from "../../../src/notification/intake/consumer/worker.ts";
import { createWorkers } from "../../../src/notification/workers.ts";
import type { Sql } from "../../../src/shared/db.ts";
import { silentLogger } from "../../../src/shared/logger.ts";
import { createNatsLink } from "../../../src/shared/nats.ts";
import { systemClock, Waker } from "../../../src/shared/runtime.ts";
import { startTestIdp, type TestIdp } from "../../support/idp.ts";
import { type DatabaseFixture, uniqueName, useTestDatabase } from "../../support/infra.ts";
import { waitUntil } from "../../support/wait.ts";
import { notificationApp } from "../app.helpers.ts";
import { testConfig, testMetrics } from "../helpers.ts";

export const PLAYER_AUDIENCE = "https://game.test";

/** The configuration of a test file: the test IdP as the players' issuer, its own signal subject. */
export function playerConfig(idp: TestIdp, env: Record<string, string> = {}): NotificationConfig {
  return testConfig({
    NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
    NOTIFICATION_PLAYER_JWT_AUDIENCE: PLAYER_AUDIENCE,
    NOTIFICATION_PLAYER_NATS_SUBJECT: `${uniqueName("players")}.signals`,
    NOTIFICATION_STREAM_RECHECK_INTERVAL: "60s",
    ...env,
  });
}

/** A player's access token as their game client holds it: `sub` is the user id. */
export function playerToken(idp: TestIdp, userId: string, options: { expiresInS?: number } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return idp.forge({
    iss: idp.issuer,
    aud: PLAYER_AUDIENCE,
    sub: userId,
    iat: now,
    exp: now + (options.expiresInS ?? 300),
    client_id: "game",
  });
}

export type Replica = {
  url: string;
  players: Players;
  registry: ReturnType<typeof testMetrics>["registry"];
  /**
   * Stores notifications as the consumer does, then tells the players' side (unless `silently`); each payload is
   * `{user_id}` and `extra`.
   */
  store: (
    userIds: string[],
    options?: { silently?: boolean; extra?: Record<string, unknown> },
  ) => Promise<StoreOutcome>;
  stop: () => Promise<void>;
};

/**
 * One replica. With `consume`, it also runs the event consumer (and delivery), so events published to the test
 * stream are stored by it; `dropSignals` drops every signal it would publish to the other replicas.
 */
export async function startReplica(input: {
  config: NotificationConfig;
  sql: Sql;
  nc: NatsConnection | undefined;
  consume?: boolean;
  dropSignals?: () => boolean;
  health?: ConsumerHealth;
}): Promise<Replica> {
  const { config, sql } = input;
  const { registry, metrics } = testMetrics();
  const link = input.nc ? createNatsLink(Promise.resolve(input.nc), silentLogger) : undefined;
  const players = createPlayers({
    config: { players: config.players, workerId: uniqueName("replica") },
    sql,
    log: silentLogger,
    registry,
    now: systemClock,
    link,
    dropSignals: input.dropSignals,
  });
  const workers = input.consume
    ? createWorkers({
        config,
        sql,
        log: silentLogger,
        now: systemClock,
        metrics,
        waker: new Waker(),
        workerId: uniqueName("worker"),
        link,
        health: input.health ?? { bound: {} },
        players,
      })
    : players.workers;
  const stop = new AbortController();
  const running = workers.map((w) => w.run(stop.signal));
  const app = notificationApp(sql, {
    registry,
    players: players.routes,
  });
  const server = app.listen({ hostname: "127.0.0.1", port: 0 });
  return {
    url: `http://127.0.0.1:${server.server?.port}`,
    players,
    registry,
    store: async (userIds, options = {}) => {
      const occurredAt = new Date().toISOString();
      const events = userIds.map((userId) => ({
        eventId: crypto.randomUUID(),
        notifications: [
          { userId, type: "EntitlementGranted" as const, occurredAt, payload: { user_id: userId, ...options.extra } },
        ],
      }));
      const outcome = await storeEvents(sql, events, new Date());
      if (!options.silently) players.stored(userIds);
      return outcome;
    },
    stop: async () => {
      players.hub.closeAll("shutdown");
      stop.abort();
      await Promise.all(running);
      await server.stop(true);
    },
  };
}

export type SseEvent = { id?: string; event: string; data: string };

/** An open stream: the events read so far (comments are counted apart), and a way to hang up. */
export type SseReader = {
  status: number;
  headers: Headers;
  events: SseEvent[];
  comments: string[];
  ended: Promise<void>;
  close: () => void;
};

/** Opens a stream and reads its events in the background, as a browser's EventSource would parse them. */
export async function openStream(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const abort = new AbortController();
  const response = await fetch(url, { headers, signal: abort.signal });
  const reader: SseReader = {
    status: response.status,
    headers: response.headers,
    events: [],
    comments: [],
    ended: Promise.resolve(),
    close: () => abort.abort(),
  };
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    return reader;
  }
  reader.ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf("\n\n");
        while (end >= 0) {
          parseFrame(buffer.slice(0, end), reader);
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf("\n\n");
        }
      }
    } catch {
      // aborted, or closed by the server
    }
  })();
  return reader;
}

function parseFrame(frame: string, reader: SseReader): void {
  const event: SseEvent = { event: "message", data: "" };
  let isEvent = false;
  for (const line of frame.split("\n")) {
    if (line.startsWith(":")) reader.comments.push(line.slice(1).trim());
    else if (line.startsWith("id: ")) event.id = line.slice(4);
    else if (line.startsWith("event: ")) {
      event.event = line.slice(7);
      isEvent = true;
    } else if (line.startsWith("data: ")) {
      event.data = line.slice(6);
      isEvent = true;
    }
  }
  if (isEvent) reader.events.push(event);
}

/** The seqs of the notification events read so far. */
export const seqsOf = (reader: SseReader) =>
  reader.events.filter((e) => e.event === "notification").map((e) => Number(e.id));

export const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** What a test file of players' streams shares: its database, the IdP players take tokens from, and its streams. */
export type PlayerStreams = {
  f: DatabaseFixture;
  /** Set once the file's tests start, as `f.sql` is. */
  idp: TestIdp;
  /** Opens a stream on `on` with `userId`'s token (and `headers`), closed after the file's tests. */
  open: (on: Replica, userId: string, headers?: Record<string, string>, query?: string) => Promise<SseReader>;
  /** Keeps a stream opened another way, to close it after the file's tests. */
  keep: (reader: SseReader) => SseReader;
};

/** The hooks of a test file of players' streams: its database and IdP before its tests, closed with its streams after. */
export function usePlayerStreams(label: string, poolMax: number): PlayerStreams {
  const f = useTestDatabase(label, { service: "notification", poolMax });
  const readers: SseReader[] = [];
  const keep = (reader: SseReader) => {
    readers.push(reader);
    return reader;
  };
  const p: PlayerStreams = {
    f,
    idp: undefined as unknown as TestIdp,
    keep,
    open: async (on, userId, headers = {}, query = "") =>
      keep(
        await openStream(`${on.url}/v1/me/notifications/stream${query}`, {
          authorization: `Bearer ${await playerToken(p.idp, userId)}`,
          ...headers,
        }),
      ),
  };
  beforeAll(async () => {
    p.idp = await startTestIdp();
  });
  afterAll(async () => {
    for (const r of readers) r.close();
    await p.idp?.close();
  });
  return p;
}

/** Waits until `reader` has received seq `last`. */
export const received = (reader: SseReader, last: number, what: string) =>
  waitUntil(() => (seqsOf(reader).at(-1) ?? 0) >= last, what, 30_000, 20);
