// The body of one event stream: a queue bounded in bytes between what the stream writes and what the client reads.
// The stream writes while the queue has room and then waits for the reader to make some, so a resume of any size goes
// out at the reader's pace and the queue never holds more than the buffer and one frame; a reader that makes no room
// for `stallMs` has stopped reading, and the stream is then closed without holding anything else up.
export type SseBody = {
  body: ReadableStream<Uint8Array>;
  /** Queues a chunk, room or not: the caller asks for room before each notification. */
  write: (chunk: Uint8Array) => void;
  /**
   * Resolves true once the queue has room (at once when it has, or once the body ended); false when it is still full
   * after `stallMs`: the reader has stopped reading.
   */
  room: () => Promise<boolean>;
  /** performance.now() of the last write. */
  lastWriteAt: () => number;
  /** Ends the body: after what is queued, or (`drop`) at once, the backlog discarded with the connection. */
  end: (drop: boolean) => void;
};

/**
 * What Bun's server holds for a streamed response grows when its body's queue counts bytes or has a large high-water
 * mark (tests/bench/response-memory.ts: 7.5 KB of RSS a response behind 256 KiB counted in bytes, 3.4 KB behind one
 * chunk). So the queue counts chunks, full from one, and the bytes are counted here: the chunks still queued are
 * `1 - desiredSize`, and those the reader took are the oldest written.
 */
function createQueueBytes(controller: () => ReadableStreamDefaultController<Uint8Array>) {
  const sizes: number[] = [];
  let bytes = 0;
  return {
    added: (size: number) => {
      sizes.push(size);
      bytes += size;
    },
    /** Bytes still queued, once the sizes of the chunks the reader took are dropped. */
    queued: () => {
      const waiting = 1 - (controller().desiredSize ?? 1);
      while (sizes.length > waiting) bytes -= sizes.shift() ?? 0;
      return bytes;
    },
  };
}

export function createSseBody(bufferBytes: number, stallMs: number, onCancel: () => void): SseBody {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let ended = false;
  let lastWriteAt = performance.now();
  let roomWaiter: (() => void) | undefined;
  const queue = createQueueBytes(() => controller);
  const hasRoom = () => ended || queue.queued() < bufferBytes;
  const freeRoom = () => {
    roomWaiter?.();
    roomWaiter = undefined;
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start: (c) => {
        controller = c;
      },
      // Runs when the reader has taken every queued chunk (desiredSize back to 1).
      pull: freeRoom,
      cancel: () => {
        ended = true;
        freeRoom();
        onCancel();
      },
    },
    { highWaterMark: 1 },
  );
  return {
    body,
    write: (chunk) => {
      if (ended) return;
      controller.enqueue(chunk);
      queue.added(chunk.byteLength);
      lastWriteAt = performance.now();
    },
    room: () => (hasRoom() ? Promise.resolve(true) : awaitRoom(stallMs, hasRoom, (w) => (roomWaiter = w))),
    lastWriteAt: () => lastWriteAt,
    end: (drop) => {
      if (ended) return;
      ended = true;
      freeRoom();
      try {
        if (drop) controller.error(new Error("the reader is too slow"));
        else controller.close();
      } catch {
        // the client went away at the same moment
      }
    },
  };
}

/**
 * Resolves true once the queue has room: when the reader empties it (`setWaiter`'s callback), or, at the end of
 * `stallMs`, when it is below the bound; false when it is still full then: the reader has stopped reading.
 */
function awaitRoom(
  stallMs: number,
  hasRoom: () => boolean,
  setWaiter: (waiter: (() => void) | undefined) => void,
): Promise<boolean> {
  return new Promise((resolve) => {
    const stalled = setTimeout(() => {
      setWaiter(undefined);
      resolve(hasRoom());
    }, stallMs);
    setWaiter(() => {
      clearTimeout(stalled);
      resolve(true);
    });
  });
}
