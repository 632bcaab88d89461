// The body of one event stream: a queue bounded in bytes between what the stream writes and what the client reads.
// The stream waits for room before each read from the database, so its own bursts (a resume of 1,000) never overflow
// the queue; a reader that stops reading does, and the stream is then closed without holding anything else up.
export type SseBody = {
  body: ReadableStream<Uint8Array>;
  /** Queues a chunk; false once more than the buffer waits for the reader (the caller closes the stream). */
  write: (chunk: Uint8Array) => boolean;
  /** Resolves when the reader has taken at least half the buffer (at once when it has, or once the body ended). */
  room: () => Promise<void>;
  /** performance.now() of the last write. */
  lastWriteAt: () => number;
  /** Ends the body: after what is queued, or (`drop`) at once, the backlog discarded with the connection. */
  end: (drop: boolean) => void;
};

export function createSseBody(bufferBytes: number, onCancel: () => void): SseBody {
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
      if (ended) return true;
      controller.enqueue(chunk);
      lastWriteAt = performance.now();
      return (controller.desiredSize ?? 0) >= 0;
    },
    room: () =>
      ended || (controller.desiredSize ?? 0) >= bufferBytes / 2
        ? Promise.resolve()
        : new Promise((resolve) => {
            roomWaiter = resolve;
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
