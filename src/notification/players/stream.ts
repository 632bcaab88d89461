// One player's live stream. It numbers nothing itself: each time it is woken it reads the player's notifications after
// the last seq it sent, in seq order, so a wake-up that comes twice costs a read and one that never comes costs only
// latency (the hub's recheck wakes it). Seq order is commit order, so reading after the last seq sent never skips a
// notification that commits later. What waits for a slow reader is bounded: beyond it the stream is closed (the
// client resumes from its Last-Event-ID) and nothing else waits for it.
import type { Sql } from "../../shared/db.ts";
import type { Logger } from "../../shared/logger.ts";
import { toItem } from "./inbox.ts";
import type { PlayerMetrics } from "./metrics.ts";
import { lastSeq, readPlayerNotificationsAfter } from "./queries.ts";
import { KEEP_ALIVE, notificationFrame, OPENING, resetFrame } from "./sse.ts";

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

export function openPlayerStream(
  deps: StreamDeps,
  input: { userId: string; resumeAfter: string | undefined; expiresAtMs: number },
): PlayerStream {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  let position = input.resumeAfter ?? "0";
  let reading = false;
  let again = false;
  let lastWriteAt = performance.now();
  let roomWaiter: (() => void) | undefined;

  const body = new ReadableStream<Uint8Array>(
    {
      start: (c) => {
        controller = c;
      },
      pull: () => {
        roomWaiter?.();
        roomWaiter = undefined;
      },
      cancel: () => close("client"),
    },
    { highWaterMark: deps.bufferBytes, size: (chunk) => chunk?.byteLength ?? 0 },
  );

  function write(chunk: Uint8Array): void {
    if (closed) return;
    controller.enqueue(chunk);
    lastWriteAt = performance.now();
    if ((controller.desiredSize ?? 0) < 0) close("slow_reader");
  }

  /** Waits until the reader took at least half the buffer, so one read never overflows it by itself. */
  function room(): Promise<void> {
    if (closed || (controller.desiredSize ?? 0) >= deps.bufferBytes / 2) return Promise.resolve();
    return new Promise((resolve) => {
      roomWaiter = resolve;
    });
  }

  function close(reason: CloseReason): void {
    if (closed) return;
    closed = true;
    clearTimeout(expiry);
    roomWaiter?.();
    try {
      // A slow reader's backlog is dropped with its connection; the others end after what they were sent.
      if (reason === "slow_reader") controller.error(new Error("the reader is too slow"));
      else if (reason !== "client") controller.close();
    } catch {
      // the client went away at the same moment
    }
    deps.onClose(stream, reason);
  }

  /** Where a stream starts: after the client's seq (reset first when some of what followed is gone), else now. */
  async function start(): Promise<void> {
    const last = await lastSeq(deps.sql, input.userId);
    if (input.resumeAfter === undefined) {
      position = last;
      return;
    }
    deps.metrics.resumes.inc();
    const [first] = await readPlayerNotificationsAfter(deps.sql, {
      userId: input.userId,
      afterSeq: position,
      limit: 1,
    });
    const after = BigInt(position);
    const gone = first ? BigInt(first.seq) > after + 1n : BigInt(last) > after;
    if (gone || after > BigInt(last)) {
      deps.metrics.resets.inc();
      write(resetFrame(last));
      if (after > BigInt(last)) position = last;
    }
  }

  async function sendPages(): Promise<void> {
    for (;;) {
      await room();
      if (closed) return;
      const rows = await readPlayerNotificationsAfter(deps.sql, {
        userId: input.userId,
        afterSeq: position,
        limit: PAGE,
      });
      for (const row of rows) {
        if (closed) return;
        write(notificationFrame(toItem(row)));
        position = row.seq;
        deps.metrics.eventsSent.inc();
        deps.metrics.delay.observe(Math.max(0, Date.now() - row.created_at.getTime()) / 1000);
      }
      if (rows.length < PAGE) return;
    }
  }

  async function catchUp(): Promise<void> {
    if (closed) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        await ready;
        await sendPages();
      } while (again && !closed);
    } catch (error) {
      if (!closed) {
        deps.log.warn({ err: error }, "reading a player's notifications failed; trying again");
        setTimeout(() => void catchUp(), RETRY_MS);
      }
    } finally {
      reading = false;
    }
  }

  // Where the stream starts is settled before its response is given: whatever commits after the client sees the
  // response has a greater seq, so "new" means new since the stream opened.
  const ready = start();
  const remaining = Math.min(Math.max(0, input.expiresAtMs - Date.now()), 2 ** 31 - 1);
  const expiry = setTimeout(() => close("expired"), remaining);
  const stream: PlayerStream = {
    userId: input.userId,
    response: new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
      },
    }),
    ready,
    position: () => position,
    wake: () => {
      if (!closed) void catchUp();
    },
    keepAlive: (idleMs, now) => {
      if (!closed && now - lastWriteAt >= idleMs) write(KEEP_ALIVE);
    },
    close,
  };
  write(OPENING);
  return stream;
}
