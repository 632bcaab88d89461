// One player's live stream. It numbers nothing itself: each time it is woken it reads the player's notifications after
// the last seq it sent, in seq order, so a wake-up that comes twice costs a read and one that never comes costs only
// latency (the hub's recheck wakes it). Seq order is commit order, so reading after the last seq sent never skips a
// notification that commits later.
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { ReadAfter } from "./batch-read.ts";
import { toItem } from "./inbox.ts";
import type { PlayerMetrics } from "./metrics.ts";
import { lastSeq, readPlayerNotificationsAfter } from "./queries.ts";
import { closedFrame, KEEP_ALIVE, notificationFrame, OPENING, resetFrame } from "./sse.ts";
import { createSseBody, type SseBody } from "./sse-body.ts";

/**
 * Rows per read at most: a resume of 1,000 takes ten reads. A page is written a row at a time, each once the reader
 * has left room, so the size of the rows never matters: the reader's pace does.
 */
export const PAGE = 100;
/** After a failed read (the database away), the next try. */
const RETRY_MS = 1_000;

export type CloseReason = "client" | "expired" | "replaced" | "slow_reader" | "shutdown" | "error";

export type PlayerStream = {
  userId: string;
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
  /** A page of the player's rows after a seq (PAGE rows at most), read together with other streams' (hub.ts). */
  readAfter: ReadAfter;
  bufferBytes: number;
  /** A stream whose buffer stays full this long (its reader took nothing) is closed as slow_reader. */
  stallMs: number;
  onClose: (stream: PlayerStream, reason: CloseReason) => void;
};

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
/** Where a stream's notifications go: its body, its position, and what ends it when its reader stalls. */
type Sender = { out: SseBody; cursor: Cursor; stalled: () => void; ready: Promise<void> };

/** True once the body has room; false (the stream closed) when it is closed or its reader stopped reading. */
async function awaitRoom(send: Sender): Promise<boolean> {
  const room = await send.out.room();
  if (!room) send.stalled();
  return room && !send.cursor.closed;
}

/**
 * Sends every notification after the cursor's position, each once the reader has left room, a page read at a time;
 * the cursor moves with each row written, so the next read starts after the last one sent.
 */
async function sendPages(deps: StreamDeps, userId: string, send: Sender) {
  const { cursor } = send;
  for (;;) {
    if (!(await awaitRoom(send))) return;
    const rows = await deps.readAfter({ userId, afterSeq: cursor.position });
    for (const row of rows) {
      if (!(await awaitRoom(send))) return;
      send.out.write(notificationFrame(toItem(row)));
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
function createCatchUp(deps: StreamDeps, userId: string, send: Sender): () => Promise<void> {
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
        await sendPages(deps, userId, send);
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

/**
 * A stream and its response. The response is handed to the server once and not kept: an open stream holds its body
 * alone, not a second Response and its Headers (the server answers with a copy that carries its own headers).
 */
export function openPlayerStream(deps: StreamDeps, input: Input): { stream: PlayerStream; response: Response } {
  const cursor: Cursor = { position: input.resumeAfter ?? "0", closed: false };
  const out = createSseBody(deps.bufferBytes, deps.stallMs, () => close("client"));

  function close(reason: CloseReason): void {
    if (cursor.closed) return;
    cursor.closed = true;
    clearTimeout(expiry);
    // The client is told why, so that it does not come straight back and close the player's next oldest stream.
    if (reason === "replaced") out.write(closedFrame("stream_limit"));
    // A slow reader's backlog is dropped with its connection; the others end after what they were sent.
    out.end(reason === "slow_reader");
    deps.onClose(stream, reason);
  }

  // Where the stream starts is settled before its response is given: whatever commits after the client sees the
  // response has a greater seq, so "new" means new since the stream opened.
  const ready = startingPoint(deps, input).then(({ position, reset }) => {
    cursor.position = position;
    if (reset !== undefined) {
      deps.metrics.resets.inc();
      out.write(resetFrame(reset));
    }
  });
  const stalled = () => close("slow_reader");
  const catchUp = createCatchUp(deps, input.userId, { out, cursor, stalled, ready });

  const remaining = Math.min(Math.max(0, input.expiresAtMs - Date.now()), 2 ** 31 - 1);
  const expiry = setTimeout(() => close("expired"), remaining);
  const stream: PlayerStream = {
    userId: input.userId,
    ready,
    position: () => cursor.position,
    wake: () => void catchUp(),
    keepAlive: (idleMs, now) => {
      if (!cursor.closed && now - out.lastWriteAt() >= idleMs) out.write(KEEP_ALIVE);
    },
    close,
  };
  out.write(OPENING);
  return { stream, response: eventStream(out.body) };
}
