// Finalizing in groups: items that end within a few milliseconds of each other go out together in one statement, about
// one statement per group instead of one per item. Those that end while a group's statement is in flight go in the
// next; with a linger, a group's first item also waits that long for the others. The relay's PUBLISHED marks and the
// delivery's SENT marks (a linger of their own, docs/decisions.md ADR-37), the endpoints' deliveries and the pushes
// (none) record through it.

/** One item waiting for its group's statement: resolve(true) recorded, resolve(false) lease lost, reject failed. */
export type Waiting<T> = { item: T; resolve: (changed: boolean) => void; reject: (e: unknown) => void };

/**
 * Records an item; `flush` starts the next statement now instead of at the end of the linger, and resolves once every
 * item waiting at the call is settled.
 */
export type GroupedRecorder<T> = ((item: T) => Promise<boolean>) & { flush(): Promise<void> };

/**
 * `flushGroup` settles every waiting item of its group; groups run one at a time. With `lingerMs`, a group's first
 * item waits that long for the rest (or for `flush`); without it, only for the current turn of the event loop.
 */
export function createGroupedRecorder<T>(
  flushGroup: (group: Waiting<T>[]) => Promise<void>,
  options: { lingerMs?: number } = {},
): GroupedRecorder<T> {
  let waiting: Waiting<T>[] = [];
  let running: Promise<void> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let soon = false;

  async function drain(): Promise<void> {
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      await flushGroup(group);
    }
    running = undefined;
  }
  const flush = (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    soon = false;
    if (!running && waiting.length > 0) running = drain();
    return running ?? Promise.resolve();
  };
  const schedule = () => {
    if (running || timer || soon) return;
    if (options.lingerMs) timer = setTimeout(() => void flush(), options.lingerMs);
    else {
      soon = true;
      setImmediate(() => void flush());
    }
  };
  const record = (item: T) =>
    new Promise<boolean>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      schedule();
    });
  return Object.assign(record, { flush });
}

/**
 * A grouped recorder whose statement `mark` returns the keys of the rows it changed: each item resolves true when its
 * key is among them (false: its lease was lost), and every item of a group whose statement failed rejects.
 */
export function createMarkRecorder<T>(
  mark: (items: T[]) => Promise<string[]>,
  key: (item: T) => string,
  options: { lingerMs?: number } = {},
): GroupedRecorder<T> {
  return createGroupedRecorder<T>(async (group) => {
    try {
      const changed = new Set(await mark(group.map((w) => w.item)));
      for (const w of group) w.resolve(changed.has(key(w.item)));
    } catch (error) {
      for (const w of group) w.reject(error);
    }
  }, options);
}
