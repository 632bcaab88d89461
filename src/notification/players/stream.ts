// One player's live stream. It numbers nothing itself: each time it is woken it reads the player's notifications after
// the last seq it sent, in seq order, so a wake-up that comes twice costs a read and one that never comes costs only
// latency (the hub's recheck wakes it). Seq order is commit order, so reading after the last seq sent never skips a
// notification that commits later.
import type { Sql } from "../../shared/db.ts";
import type { Logger } from "../../shared/logger.ts";
import { toItem } from "./inbox.ts";
import type { PlayerMetrics } from "./metrics.ts";
import { lastSeq, readPlayerNotificationsAfter } from "./queries.ts";
import { KEEP_ALIVE, notificationFrame, OPENING, resetFrame } from "./sse.ts";
import { createSseBody, type SseBody } from "./sse-body.ts";

/** Rows per read: a resume of 1,000 takes ten reads, each waiting for the reader to make room. */
const PAGE = 100;
/** After a failed read (the database away), the next try. */
const RETRY_MS = 1_000;

export type CloseReason = "client" | "expired" | "replaced" | "slow_reader" | "shutdown" | "error";

export type PlayerStream = {
  userId: string;
  response: Response;
  /** Settles where the stream starts (rejects when the database cannot say). */
  ready: Promise<void>;
  /** The last seq sent (or the start point), as text: seqs are bigint. */
  position: () => string;
  /** Reads and sends whatever was stored after the position. */
  wake: () => void;
  /** Sends a keep-alive comment when nothing was written for `idleMs`. */
  keepAlive: (idleMs: number, now: number) => void;
  close: (reason: CloseReason) => void;
};

export type StreamDeps = {
  sql: Sql;
  log: Logger;
  metrics: PlayerMetrics;
  bufferBytes: number;
  onClose: (stream: PlayerStream, reason: CloseReason) => void;
};

type Write = (chunk: Uint8Array) => boolean;
type Input = { userId: string; resumeAfter: string | undefined; expiresAtMs: number };

/**
 * Where a stream starts: now (the player's last seq) without a resume point; else after it, with `reset` first when
 * some of what followed it is gone (retention) or it is beyond anything given.
 */
async function startingPoint(deps: StreamDeps, input: Input): Promise<{ position: string; reset?: string }> {
  const last = await lastSeq(deps.sql, input.userId);
  if (input.resumeAfter === undefined) return { position: last };
  deps.metrics.resumes.inc();
  const after = BigInt(input.resumeAfter);
  const [first] = await readPlayerNotificationsAfter(deps.sql, {
    userId: input.userId,
    afterSeq: input.resumeAfter,
    limit: 1,
  });
  if (after > BigInt(last)) return { position: last, reset: last };
  const gone = first ? BigInt(first.seq) > after + 1n : BigInt(last) > after;
  return gone ? { position: input.resumeAfter, reset: last } : { position: input.resumeAfter };
}

type Cursor = { position: string; closed: boolean };

/**
 * Sends every notification after the cursor's position, a page at a time, each page once the reader made room;
 * `write` answers false once the stream is closed.
 */
async function sendPages(deps: StreamDeps, userId: string, out: SseBody, cursor: Cursor, write: Write) {
  for (;;) {
    await out.room();
    if (cursor.closed) return;
    const rows = await readPlayerNotificationsAfter(deps.sql, { userId, afterSeq: cursor.position, limit: PAGE });
    for (const row of rows) {
      if (cursor.closed || !write(notificationFrame(toItem(row)))) return;
      cursor.position = row.seq;
      deps.metrics.eventsSent.inc();
      deps.metrics.delay.observe(Math.max(0, Date.now() - row.created_at.getTime()) / 1000);
    }
    if (rows.length < PAGE) return;
  }
}

/**
 * Reads and sends what follows the cursor each time it is called, once `ready`; a call during a read makes that read
 * go round once more, so reads never overlap and no wake-up is lost. A failed read is tried again after a second.
 */
function createCatchUp(
  deps: StreamDeps,
  userId: string,
  send: { out: SseBody; cursor: Cursor; write: Write; ready: Promise<void> },
): () => Promise<void> {
  const { cursor } = send;
  let reading = false;
  let again = false;
  const catchUp = async (): Promise<void> => {
    if (cursor.closed) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        await send.ready;
        await sendPages(deps, userId, send.out, cursor, send.write);
      } while (again && !cursor.closed);
    } catch (error) {
      if (!cursor.closed) {
        deps.log.warn({ err: error }, "reading a player's notifications failed; trying again");
        setTimeout(() => void catchUp(), RETRY_MS);
      }
    } finally {
      reading = false;
    }
  };
  return catchUp;
}

const eventStream = (body: ReadableStream<Uint8Array>) =>
  new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });

export function openPlayerStream(deps: StreamDeps, input: Input): PlayerStream {
  const cursor: Cursor = { position: input.resumeAfter ?? "0", closed: false };
  const out = createSseBody(deps.bufferBytes, () => close("client"));

  function close(reason: CloseReason): void {
    if (cursor.closed) return;
    cursor.closed = true;
    clearTimeout(expiry);
    // A slow reader's backlog is dropped with its connection; the others end after what they were sent.
    out.end(reason === "slow_reader");
    deps.onClose(stream, reason);
  }
  const write: Write = (chunk) => {
    if (!out.write(chunk)) close("slow_reader");
    return !cursor.closed;
  };

  // Where the stream starts is settled before its response is given: whatever commits after the client sees the
  // response has a greater seq, so "new" means new since the stream opened.
  const ready = startingPoint(deps, input).then(({ position, reset }) => {
    cursor.position = position;
    if (reset !== undefined) {
      deps.metrics.resets.inc();
      write(resetFrame(reset));
    }
  });
  const catchUp = createCatchUp(deps, input.userId, { out, cursor, write, ready });

  const remaining = Math.min(Math.max(0, input.expiresAtMs - Date.now()), 2 ** 31 - 1);
  const expiry = setTimeout(() => close("expired"), remaining);
  const stream: PlayerStream = {
    userId: input.userId,
    response: eventStream(out.body),
    ready,
    position: () => cursor.position,
    wake: () => void catchUp(),
    keepAlive: (idleMs, now) => {
      if (!cursor.closed && now - out.lastWriteAt() >= idleMs) write(KEEP_ALIVE);
    },
    close,
  };
  write(OPENING);
  return stream;
}
