// Slots per destination (a webhook endpoint, a push service) for a claim loop whose claim gives each destination at
// most its free slots: one that hangs holds only its own. Such a claim returns far fewer items than the loop's free
// slots, so the loop counts the round as not full and sleeps the poll interval; what ends that sleep is the release
// here: a destination that got every slot it was offered may have more due, and once half its slots are free again
// the loop is woken to claim. A destination whose items hang frees nothing and wakes nobody, and one that got less
// than it was offered has nothing more due, so an idle or stuck destination never makes the loop claim in a spin.
import type { Sql } from "../../shared/db.ts";
import { type ClaimLoop, runClaimLoop } from "./claim-loop.ts";

export type KeyedSlots = {
  /** The slots of one destination. */
  cap: number;
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
    cap,
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

/**
 * What a claim by destination is given: the lease it sets (`leaseUntil`, `lockedBy`), at most `limit` items, each
 * destination of `free` at most its free slots and every other destination at most `perKey`.
 */
export type SlotClaim = {
  now: Date;
  leaseUntil: Date;
  lockedBy: string;
  limit: number;
  perKey: number;
  free: { key: string; free: number }[];
};

/** What a worker whose claim goes by destination gives its claim loop. */
type SlottedWorker = Pick<ClaimLoop<unknown>, "sql" | "log" | "waker" | "pollIntervalMs"> & {
  /** Items in flight at most, all destinations together. */
  maxInFlight: number;
  now: () => Date;
  leaseMs: number;
  workerId: string;
};

/**
 * Runs the claim loop of a worker whose claim gives each destination at most its free slots (every other one all
 * its slots), claiming again as soon as one slot is free; `keyOf` names an item's destination.
 */
export function runSlottedClaimLoop<T>(
  d: SlottedWorker,
  slots: KeyedSlots,
  loop: Omit<ClaimLoop<T>, "sql" | "log" | "waker" | "pollIntervalMs" | "slots" | "refillAt" | "claim"> & {
    claim: (db: Sql, input: SlotClaim) => Promise<T[]>;
    keyOf: (item: T) => string;
  },
  signal: AbortSignal,
): Promise<void> {
  const { claim, keyOf, ...rest } = loop;
  return runClaimLoop(
    {
      ...rest,
      sql: d.sql,
      log: d.log,
      waker: d.waker,
      pollIntervalMs: d.pollIntervalMs,
      slots: d.maxInFlight,
      refillAt: 1,
      claim: slotClaimer(d, slots, (input) => claim(d.sql, input), keyOf),
    },
    signal,
  );
}

/** A claim for up to `free` items: each destination offered what it has left of its slots, then a slot taken per item. */
function slotClaimer<T>(
  d: SlottedWorker,
  slots: KeyedSlots,
  claim: (input: SlotClaim) => Promise<T[]>,
  keyOf: (item: T) => string,
): (free: number) => Promise<T[]> {
  return async (free) => {
    const now = d.now();
    const offered = slots.offer();
    const leaseUntil = new Date(now.getTime() + d.leaseMs);
    const claimed = await claim({
      now,
      leaseUntil,
      lockedBy: d.workerId,
      limit: free,
      perKey: slots.cap,
      free: offered,
    });
    slots.took(offered, claimed.map(keyOf));
    return claimed;
  };
}
