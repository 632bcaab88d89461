// Finalizing in groups: items that end within a few milliseconds of each other go out together in one statement, about
// one statement per group instead of one per item. Those that end while a group's statement is in flight go in the
// next; with a linger, a group's first item also waits that long for the others. The relay's PUBLISHED marks and the
// delivery's SENT marks (a linger of their own, docs/decisions.md ADR-37), the endpoints' deliveries and the pushes
// (none) record through it.

/** One item waiting for its group's statement: resolve(true) recorded, resolve(false) lease lost, reject failed. */
export type Waiting<T> = { item: T; resolve: (changed: boolean) => void; reject: (e: unknown) => void };

/** Records an item; `flush` starts the next statement now instead of at the end of the linger. */
export type GroupedRecorder<T> = ((item: T) => Promise<boolean>) & { flush(): void };

/**
 * `flushGroup` settles every waiting item of its group; groups run one at a time. With `lingerMs`, a group's first
 * item waits that long for the rest (or for `flush`); without it, only for the current turn of the event loop.
 */
export function createGroupedRecorder<T>(
  flushGroup: (group: Waiting<T>[]) => Promise<void>,
  options: { lingerMs?: number } = {},
): GroupedRecorder<T> {
  let waiting: Waiting<T>[] = [];
  let flushing = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function run(): Promise<void> {
    timer = undefined;
    flushing = true;
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      await flushGroup(group);
    }
    flushing = false;
  }
  const schedule = () => {
    if (flushing || timer) return;
    if (options.lingerMs) timer = setTimeout(() => void run(), options.lingerMs);
    else {
      flushing = true;
      setImmediate(() => void run());
    }
  };
  const flush = () => {
    if (flushing || waiting.length === 0) return;
    clearTimeout(timer);
    void run();
  };
  const record = (item: T) =>
    new Promise<boolean>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      schedule();
    });
  return Object.assign(record, { flush });
}

/** Settles each waiting item of a group keyed by `key`: true when its key is among those the statement changed. */
export function settleGroup<T>(group: Waiting<T>[], changed: string[], key: (item: T) => string): void {
  const ids = new Set(changed);
  for (const w of group) w.resolve(ids.has(key(w.item)));
}
