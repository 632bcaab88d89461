// The body of one event stream: a queue bounded in bytes between what the stream writes and what the client reads.
// The stream writes while the queue has room and then waits for the reader to make some, so a resume of any size goes
// out at the reader's pace and the queue never holds more than the buffer and one frame; a reader that makes no room
// for `stallMs` has stopped reading, and the stream is then closed without holding anything else up.
export type SseBody = {
  body: ReadableStream<Uint8Array>;
  /** Queues a chunk, room or not: the caller asks for room before each notification. */
  write: (chunk: Uint8Array) => void;
  /**
   * Resolves true once the queue has room (at once when it has, or once the body ended); false when it stayed full
   * for `stallMs`: the reader took nothing in that time.
   */
  room: () => Promise<boolean>;
  /** performance.now() of the last write. */
  lastWriteAt: () => number;
  /** Ends the body: after what is queued, or (`drop`) at once, the backlog discarded with the connection. */
  end: (drop: boolean) => void;
};

export function createSseBody(bufferBytes: number, stallMs: number, onCancel: () => void): SseBody {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let ended = false;
  let lastWriteAt = performance.now();
  let roomWaiter: (() => void) | undefined;
  const freeRoom = () => {
    roomWaiter?.();
    roomWaiter = undefined;
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start: (c) => {
        controller = c;
      },
      pull: freeRoom,
      cancel: () => {
        ended = true;
        freeRoom();
        onCancel();
      },
    },
    { highWaterMark: bufferBytes, size: (chunk) => chunk?.byteLength ?? 0 },
  );
  return {
    body,
    write: (chunk) => {
      if (ended) return;
      controller.enqueue(chunk);
      lastWriteAt = performance.now();
    },
    // The body's pull runs each time the reader takes a chunk and leaves room (desiredSize > 0): that is the wake-up.
    room: () =>
      ended || (controller.desiredSize ?? 0) > 0
        ? Promise.resolve(true)
        : new Promise((resolve) => {
            const stalled = setTimeout(() => {
              roomWaiter = undefined;
              resolve(false);
            }, stallMs);
            roomWaiter = () => {
              clearTimeout(stalled);
              resolve(true);
            };
          }),
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
