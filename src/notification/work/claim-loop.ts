// The one loop of every delivery: the configured channel's (delivery/), the endpoints' (endpoints/), and any other
// destination whose due rows are claimed with a lease. Each round claims up to the free slots (`for update skip
// locked`, leased to this worker), runs every item on its own (a slow receiver holds only its own slot), and the items
// finalize themselves under their lease, in groups (delivery/sent.ts, endpoints/outcomes.ts). Woken at once by its
// Waker (this process stored rows) and by a NOTIFY on its channel (another process made rows due), polling as the
// safety net; idle (two empty rounds), it sleeps as long as the destination says. It never dies on a transient error:
// logged once (and every 60th time), counted, retried after the poll interval.
import type { Sql } from "../../shared/db.ts";
import { listenInBackground } from "../../shared/listen.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Waker } from "../../shared/runtime.ts";

export type ClaimLoop<T> = {
  /** Names the loop in its log lines: "<label> recovered", "<label> round failed". */
  label: string;
  sql: Sql;
  log: Logger;
  waker: Waker;
  /** LISTENed on: a NOTIFY wakes the loop, as does every (re)LISTEN (a NOTIFY may have been missed meanwhile). */
  channel: string;
  pollIntervalMs: number;
  /** Items in flight at most. */
  slots: number;
  /** Claim again only once this many slots are free. */
  refillAt: number;
  /** Claims up to `free` due items for this worker, each under a lease. */
  claim: (free: number) => Promise<T[]>;
  /** Sends one claimed item and finalizes it under its lease; never rejects. */
  run: (item: T) => Promise<void>;
  /** After a round's items started (the channel's backlog gauge); a throw counts as the round's failure. */
  afterClaim?: (claimed: number, free: number) => Promise<void>;
  /** How long an idle loop sleeps (until its next due row, at most its idle poll); the poll interval without it. */
  idleSleepMs?: () => Promise<number>;
  /** While true, this process's wakes are slept through: only a NOTIFY or the poll ends a sleep. */
  quiet?: () => boolean;
  /** Told of every NOTIFY and (re)LISTEN on `channel`, before the wake. */
  onNotify?: () => void;
  /** Before the loop waits for a slot to free: what holds the items in hand (a lingering finalize) should go now. */
  onSlotsFull?: () => void;
  /** The items in hand, when some also arrive without a claim (the delivery's handoff); the loop's own otherwise. */
  inFlight?: Set<Promise<void>>;
};

type Round = { claimed: number; free: number; failures: number; emptyRounds: number };

/** Runs each item on its own, in hand (in `inFlight`) until it ends: what a claim took, or what came without one. */
export function runInSlots<T>(inFlight: Set<Promise<void>>, run: (item: T) => Promise<void>, items: T[]): void {
  for (const item of items) {
    const running: Promise<void> = run(item).finally(() => inFlight.delete(running));
    inFlight.add(running);
  }
}

async function claimRound<T>(loop: ClaimLoop<T>, inFlight: Set<Promise<void>>, free: number): Promise<number> {
  const items = await loop.claim(free);
  runInSlots(inFlight, loop.run, items);
  await loop.afterClaim?.(items.length, free);
  return items.length;
}

/** Sleeps `ms`, or less when woken; while `quiet`, wakes of this process are slept through. */
async function sleepUnlessWanted<T>(loop: ClaimLoop<T>, ms: number, signal: AbortSignal): Promise<void> {
  const until = performance.now() + ms;
  await loop.waker.wait(ms, signal);
  for (let left = until - performance.now(); loop.quiet?.() && left > 0 && !signal.aborted; ) {
    await loop.waker.wait(left, signal);
    left = until - performance.now();
  }
}

/**
 * Every free slot taken means more is probably due: go again (after a slot frees) without waiting. Otherwise wait the
 * poll interval (a claim capped per destination returns fewer: its freed slots wake the loop, keyed-slots.ts), or,
 * idle, as long as the destination says; idle only after two empty rounds in a row: under load a wake often finds its
 * rows already claimed, and a look for the next due time after each would add a statement a round.
 */
async function waitAfterRound<T>(loop: ClaimLoop<T>, round: Round, signal: AbortSignal): Promise<void> {
  if (round.claimed >= round.free && round.failures === 0) return;
  const idle = round.emptyRounds >= 2 && loop.idleSleepMs;
  await sleepUnlessWanted(loop, idle ? await idle() : loop.pollIntervalMs, signal);
}

/** Runs the loop until `signal` aborts; then the items in hand finish (each bounded by its send's timeout). */
export async function runClaimLoop<T>(loop: ClaimLoop<T>, signal: AbortSignal): Promise<void> {
  const wake = () => {
    loop.onNotify?.();
    loop.waker.wake();
  };
  const { sql, log, channel } = loop;
  const retryMs = loop.pollIntervalMs;
  const stopListening = listenInBackground(sql, { channel, onNotify: wake, onListen: wake, log, retryMs, signal });
  const inFlight = loop.inFlight ?? new Set<Promise<void>>();
  const round: Round = { claimed: 0, free: 0, failures: 0, emptyRounds: 0 };
  while (!signal.aborted) {
    round.free = loop.slots - inFlight.size;
    if (round.free < loop.refillAt) {
      loop.onSlotsFull?.();
      await Promise.race(inFlight);
      continue;
    }
    round.claimed = 0;
    try {
      round.claimed = await claimRound(loop, inFlight, round.free);
      if (round.failures > 0) log.info({ failures: round.failures }, `${loop.label} recovered`);
      round.failures = 0;
    } catch (error) {
      round.failures++;
      if (round.failures === 1 || round.failures % 60 === 0)
        log.error({ err: error, failures: round.failures }, `${loop.label} round failed`);
    }
    const empty = round.claimed === 0 && inFlight.size === 0 && round.failures === 0;
    round.emptyRounds = empty ? round.emptyRounds + 1 : 0;
    await waitAfterRound(loop, round, signal);
  }
  await Promise.all(inFlight);
  await stopListening();
}
