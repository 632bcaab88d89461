// Slots per destination (a webhook endpoint, a push service) for a claim loop whose claim gives each destination at
// most its free slots: one that hangs holds only its own. Such a claim returns far fewer items than the loop's free
// slots, so the loop counts the round as not full and sleeps the poll interval; what ends that sleep is the release
// here: a destination that got every slot it was offered may have more due, and once half its slots are free again
// the loop is woken to claim. A destination whose items hang frees nothing and wakes nobody, and one that got less
// than it was offered has nothing more due, so an idle or stuck destination never makes the loop claim in a spin.
export type KeyedSlots = {
  /** The free slots of every destination with items in flight, for the claim (the others have all `cap`). */
  offer: () => { key: string; free: number }[];
  /** After a claim with `offered`: takes a slot for each item claimed, by its destination. */
  took: (offered: { key: string; free: number }[], keys: string[]) => void;
  /** Frees one of `key`'s slots; call once per item taken, when its destination answered (or failed to). */
  release: (key: string) => void;
};

export function createKeyedSlots(cap: number, wake: () => void): KeyedSlots {
  const inFlight = new Map<string, number>();
  const mayHaveMore = new Set<string>();
  return {
    offer: () => [...inFlight].map(([key, n]) => ({ key, free: Math.max(0, cap - n) })),
    took: (offered, keys) => {
      // Counted against what was offered, as sent: items may end while the claim runs, so the count in flight when
      // it returns can be lower, and a destination that got all it was offered must still be marked.
      const left = new Map(offered.map((o) => [o.key, o.free]));
      for (const key of keys) {
        const n = (left.get(key) ?? cap) - 1;
        left.set(key, n);
        if (n <= 0) mayHaveMore.add(key);
        inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
      }
    },
    release: (key) => {
      const left = (inFlight.get(key) ?? 1) - 1;
      if (left <= 0) inFlight.delete(key);
      else inFlight.set(key, left);
      if (mayHaveMore.has(key) && left <= cap / 2) {
        mayHaveMore.delete(key);
        wake();
      }
    },
  };
}
