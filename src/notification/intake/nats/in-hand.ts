// What a reader holds between receiving a message and settling it. The ack wait is short so that the messages of a
// process killed with kill -9 come back within seconds; every message in hand, buffered or being worked, is therefore
// kept in progress (`working()`, which restarts its ack wait without counting a delivery) for as long as this process
// lives. A slow batch or a batch held through a database outage is never redelivered; a dead process stops the
// signals, and its messages are redelivered one ack wait after the last one.
import type { JsMsg } from "@nats-io/jetstream";

export type InHand = {
  add: (message: JsMsg) => void;
  /** The messages are settled (or given back): no more progress signals for them. */
  release: (messages: JsMsg[]) => void;
  /** Stops every signal (the session ended: what is left is redelivered after the ack wait). */
  clear: () => void;
  size: () => number;
};

/** How often each message in hand is signalled: three signals per ack wait, so one late timer does not lose it. */
export const progressEveryMs = (ackWaitMs: number) => Math.max(100, Math.floor(ackWaitMs / 3));

/** The timer runs only while something is in hand: an idle reader sends nothing and wakes for nothing. */
export function trackInHand(ackWaitMs: number): InHand {
  const held = new Set<JsMsg>();
  let timer: ReturnType<typeof setInterval> | undefined;
  const signal = () => {
    for (const message of held) {
      try {
        message.working();
      } catch {
        // The connection is gone: the server redelivers after the ack wait, and storing twice is deduplicated.
      }
    }
  };
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };
  return {
    add: (message) => {
      held.add(message);
      timer ??= setInterval(signal, progressEveryMs(ackWaitMs));
    },
    release: (messages) => {
      for (const message of messages) held.delete(message);
      if (held.size === 0) stop();
    },
    clear: () => {
      held.clear();
      stop();
    },
    size: () => held.size,
  };
}

/** An unbounded queue read as an async iterable: what is already pushed resolves at once (as a microtask). */
export function createQueue<T>(): AsyncIterable<T> & { push: (item: T) => void; end: () => void } {
  const items: T[] = [];
  let waiting: ((result: IteratorResult<T>) => void) | undefined;
  let ended = false;
  return {
    push: (item) => {
      if (ended) return;
      if (waiting) {
        const resolve = waiting;
        waiting = undefined;
        resolve({ value: item, done: false });
      } else items.push(item);
    },
    end: () => {
      ended = true;
      waiting?.({ value: undefined, done: true });
      waiting = undefined;
    },
    [Symbol.asyncIterator]: () => ({
      next: () => {
        if (items.length > 0) return Promise.resolve({ value: items.shift() as T, done: false });
        if (ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise<IteratorResult<T>>((resolve) => {
          waiting = resolve;
        });
      },
    }),
  };
}
