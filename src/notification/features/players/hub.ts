// The live streams of this process, by player: the limits (per player the oldest gives way; per process a 503), the
// wake-ups (a signal names players; each of their streams reads what is new), and one loop that sends keep-alives
// and, every recheck interval, compares every open stream's position with the database in one query, so a signal that
// was lost costs latency, never an event.
import type { Sql } from "../../../shared/db.ts";
import { ApiError } from "../../../shared/http/errors.ts";
import type { Logger } from "../../../shared/logger.ts";
import { forEachInTurns, sleep, type Worker } from "../../../shared/runtime.ts";
import { createBatchedReads } from "./batch-read.ts";
import type { StreamSettings } from "./config.ts";
import type { PlayerMetrics } from "./metrics.ts";
import { lastSeqs, readPlayersAfter } from "./queries.ts";
import { type CloseReason, openPlayerStream, PAGE, type PlayerStream, type StreamDeps } from "./stream.ts";

/** Streams' reads answered by one statement at most: 500 lateral index scans of a page each. */
const READS_PER_STATEMENT = 500;
/**
 * Streams given a keep-alive, or compared with the database, in one turn of the event loop. Each keep-alive is a write
 * of some 20 µs: one pass over 20,000 streams in one turn held the loop for over a tenth of a second, and the events
 * stored and sent behind it waited that long.
 */
export const STREAMS_PER_TURN = 500;
/** Seconds a client refused for the process limit is told to wait. */
const FULL_RETRY_AFTER_S = 5;

export type StreamHub = {
  open: (input: { userId: string; resumeAfter: string | undefined; expiresAtMs: number }) => Promise<Response>;
  /** These players have new notifications (stored here or on another replica). */
  signal: (userIds: Iterable<string>) => void;
  /** Wakes every stream whose player has a seq beyond what it sent. */
  recheck: () => Promise<void>;
  /** Keep-alives and rechecks until aborted; then every stream is closed. */
  worker: Worker;
  closeAll: (reason: CloseReason) => void;
  size: () => number;
};

type HubDeps = { sql: Sql; log: Logger; metrics: PlayerMetrics; settings: StreamSettings };
type OpenDeps = StreamDeps & { settings: StreamSettings };
type OpenInput = { userId: string; resumeAfter: string | undefined; expiresAtMs: number };
/** The streams by player, and how many in all. */
type Streams = { byUser: Map<string, Set<PlayerStream>>; total: number };

export function createStreamHub(deps: HubDeps): StreamHub {
  const streams: Streams = { byUser: new Map(), total: 0 };
  const { byUser } = streams;
  const readAfter = createBatchedReads((asks) => readPlayersAfter(deps.sql, asks, PAGE), READS_PER_STATEMENT);
  // One set of dependencies for every stream, built once: 20,000 open streams share it instead of holding a copy each.
  const streamDeps: OpenDeps = {
    ...deps,
    readAfter,
    bufferBytes: deps.settings.bufferBytes,
    // A stalled reader is given one heartbeat, the time a proxy would let a silent connection live.
    stallMs: deps.settings.heartbeatMs,
    onClose: (stream, reason) => {
      const own = byUser.get(stream.userId);
      if (!own?.delete(stream)) return;
      if (own.size === 0) byUser.delete(stream.userId);
      deps.metrics.open.set(--streams.total);
      deps.metrics.closes.inc({ reason });
    },
  };

  async function recheck(): Promise<void> {
    if (byUser.size === 0) return;
    const seqs = await lastSeqs(deps.sql, [...byUser.keys()]);
    await forEachInTurns(seqs, STREAMS_PER_TURN, ([userId, last]) => {
      for (const stream of byUser.get(userId) ?? []) if (BigInt(stream.position()) < BigInt(last)) stream.wake();
    });
  }

  function closeAll(reason: CloseReason): void {
    for (const mine of [...byUser.values()]) for (const stream of [...mine]) stream.close(reason);
  }

  const worker: Worker = {
    name: "player-streams",
    run: async (abort) => {
      await runKeepAliveAndRecheck(abort, { settings: deps.settings, byUser, recheck, log: deps.log });
      closeAll("shutdown");
    },
  };

  return {
    open: (input) => openStream(streamDeps, streams, input),
    signal: (userIds) => {
      for (const userId of userIds) for (const stream of byUser.get(userId) ?? []) stream.wake();
    },
    recheck,
    worker,
    closeAll,
    size: () => streams.total,
  };
}

/**
 * Opens a player's stream within the limits: over the player's, their oldest is closed; over the process's, 503. The
 * stream is registered before its start is read, so a signal in between wakes it.
 */
async function openStream(deps: OpenDeps, streams: Streams, input: OpenInput): Promise<Response> {
  const { settings, metrics } = deps;
  const mine = streams.byUser.get(input.userId) ?? new Set<PlayerStream>();
  if (mine.size >= settings.maxPerUser) {
    // Sets keep insertion order: the first is the oldest.
    mine.values().next().value?.close("replaced");
  } else if (streams.total >= settings.max) {
    metrics.refused.inc();
    throw new ApiError(503, "NOT_READY", "this server holds as many live streams as it may; retry later", {
      "retry-after": String(FULL_RETRY_AFTER_S),
    });
  }
  const { stream, response } = openPlayerStream(deps, input);
  mine.add(stream);
  streams.byUser.set(input.userId, mine);
  metrics.open.set(++streams.total);
  stream.wake();
  try {
    await stream.ready;
  } catch (error) {
    stream.close("error");
    throw error;
  }
  return response;
}

/** A keep-alive to every stream silent for `idleMs`, a turn of the event loop every STREAMS_PER_TURN streams. */
export async function keepAliveAll(
  byUser: Map<string, Set<Pick<PlayerStream, "keepAlive">>>,
  idleMs: number,
): Promise<void> {
  function* everyStream() {
    for (const streams of byUser.values()) yield* streams;
  }
  // The clock is read at each stream: the pass spans several turns, in which other streams write.
  await forEachInTurns(everyStream(), STREAMS_PER_TURN, (stream) => stream.keepAlive(idleMs, performance.now()));
}

/**
 * Every third of the heartbeat, a keep-alive to each stream that wrote nothing for the rest of it (so none is silent
 * longer than the heartbeat); every recheck interval, one query for every open stream's player.
 */
async function runKeepAliveAndRecheck(
  abort: AbortSignal,
  loop: {
    settings: StreamSettings;
    byUser: Map<string, Set<PlayerStream>>;
    recheck: () => Promise<void>;
    log: Logger;
  },
): Promise<void> {
  const { settings } = loop;
  const tickMs = Math.min(Math.max(50, Math.floor(settings.heartbeatMs / 3)), settings.recheckMs);
  let sinceRecheck = 0;
  while (!abort.aborted) {
    await sleep(tickMs, abort);
    await keepAliveAll(loop.byUser, settings.heartbeatMs - tickMs);
    sinceRecheck += tickMs;
    if (sinceRecheck < settings.recheckMs || abort.aborted) continue;
    sinceRecheck = 0;
    await loop.recheck().catch((error) => loop.log.warn({ err: error }, "rechecking the player streams failed"));
  }
}
