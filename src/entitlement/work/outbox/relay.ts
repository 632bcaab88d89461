// The relay loop: a batch as soon as a new event commits (woken in memory by this process's commands, by NOTIFY from
// the other replicas: work/wakeups.ts), the poll interval as the safety net, the next batch at once after a full one.
// While claims come back full (a backlog), up to `concurrency` lanes each run claim → publish → finalize at once, so
// claims, publishes and finalizes of different batches overlap; each batch keeps its own lease, heartbeat and guarded
// finalize, and the claim's `skip locked` keeps the lanes apart. Batches may therefore complete out of order
// (docs/decisions.md). An idle relay runs one lane, so a single new event costs one claim, not one per lane. It never
// dies: a failed batch is logged once per run of failures, counted, and retried after the poll interval. On abort no
// lane claims again; every batch in flight is finished, then it returns.

import { createMarkRecorder, type GroupedRecorder } from "../../../shared/grouped.ts";
import { idleSleepMs } from "../../../shared/periodic.ts";
import { Waker, type Worker } from "../../../shared/runtime.ts";
import type { WakeSource } from "../wakeups.ts";
import {
  type BatchReport,
  claimBatch,
  failExhaustedClaims,
  type PublishedMark,
  publishClaimedBatch,
  type RelayDeps,
  relayOutboxBatch,
} from "./batch.ts";
import { markOutboxPublished, nextOutboxDueAt } from "./queries.ts";
import { createStatisticsRefresher } from "./statistics.ts";

export type OutboxRelay = Worker & {
  /** One claim → publish → finalize pass, for tests and operators. */
  runOnce(): Promise<BatchReport>;
  /** Claim now rather than at the next poll (a reconnect, a notification). */
  wake(): void;
};

/** The longest a chain of full claims looks for new events only after its cursor (OutboxClaimArgs.after). */
const CURSOR_RESET_MS = 1_000;

/**
 * How long the PUBLISHED mark of a batch that was not full waits for other batches' marks to share its statement. At a
 * steady trickle each event then costs the relay its claim and a share of one mark, instead of a claim and a finalize
 * (whose chained claim finds nothing). Neither the publish nor the next claim waits, only the update that records the
 * publish (published_at is still the ack's time). An abort sends the marks at once; a relay that dies in the wait
 * leaves its rows IN_FLIGHT until their lease ends, as one that dies before any finalize does (docs/decisions.md ADR-37).
 */
export const FINALIZE_LINGER_MS = 20;

export function createOutboxRelay(deps: RelayDeps & { wakeups: WakeSource }): OutboxRelay {
  const waker = new Waker();
  const relay: Relay = {
    deps,
    marks: createMarkRecorder(
      (published) => markOutboxPublished(deps.sql, { lockedBy: deps.lockedBy, published }),
      (m) => m.eventId,
      { lingerMs: deps.settings.finalizeLingerMs ?? FINALIZE_LINGER_MS },
    ),
    lanes: new Set(),
    noteFullClaim: createStatisticsRefresher(deps),
    maxBatch: Math.max(deps.settings.batchSize, deps.settings.maxBatchSize ?? 0),
    failures: 0,
    exhaustedCheckedAt: Number.NEGATIVE_INFINITY,
    leasesCheckedAt: Number.NEGATIVE_INFINITY,
    claimedInPass: 0,
  };

  async function run(signal: AbortSignal): Promise<void> {
    const stopListening = deps.wakeups.onEvents(() => waker.wake(), signal);
    let emptyPasses = 0;
    while (!signal.aborted) {
      relay.claimedInPass = 0;
      if (await pass(relay, signal, true)) continue;
      emptyPasses = relay.claimedInPass === 0 ? emptyPasses + 1 : 0;
      await waker.wait(await sleepMs(relay, emptyPasses), signal);
    }
    await Promise.all(relay.lanes);
    await relay.marks.flush();
    await stopListening();
  }

  return { name: "outbox-relay", run, runOnce: () => relayOutboxBatch(deps), wake: () => waker.wake() };
}

/** The relay's state, shared by its lanes. */
type Relay = {
  deps: RelayDeps;
  /** The extra lanes of a backlog. */
  lanes: Set<Promise<void>>;
  noteFullClaim: (claimMs: number) => void;
  maxBatch: number;
  failures: number;
  /**
   * Exhausted claims are rare (a relay died on the row's last attempt) and wait for a lease to expire anyway, so they
   * are looked for at most once per poll interval rather than after every batch that was not full.
   */
  exhaustedCheckedAt: number;
  /**
   * Rows whose lease ran out come only from a relay that died, and wait for that lease anyway: one claim per poll
   * interval, of whichever lane, looks for them (OutboxClaimArgs.leases), the others look for new and due events only.
   */
  leasesCheckedAt: number;
  /** Rows the main lane's current pass claimed (an idle relay is one whose passes claim nothing). */
  claimedInPass: number;
  /** Marks published events later, with other batches' (FINALIZE_LINGER_MS); flushed when the relay stops. */
  marks: GroupedRecorder<PublishedMark>;
};

/** The extra lanes of a backlog; each stops at its first batch that is not full. */
function spawnLanes(relay: Relay, signal: AbortSignal): void {
  while (relay.lanes.size < relay.deps.settings.concurrency - 1) {
    const lane: Promise<void> = (async () => {
      while (!signal.aborted && (await pass(relay, signal, false)));
    })().finally(() => relay.lanes.delete(lane));
    relay.lanes.add(lane);
  }
}

/**
 * Claims and publishes batches; true when the last claim was full (more is probably due). While claims come back
 * full, each finalize claims the next batch in the same statement, so a backlog costs one statement per batch, and the
 * next claim is twice as large, up to `maxBatchSize`: fewer statements per event (docs/benchmarks.md, "Relay drain").
 * The first claim that is not full goes back to the configured size, so a steady trickle keeps small batches; the main
 * lane's batch that was not full leaves its PUBLISHED marks to the relay's grouped marks (FINALIZE_LINGER_MS) and
 * returns, so the next event's wake-up finds it free to claim at once.
 */
async function claimAndPublish(relay: Relay, signal: AbortSignal, main: boolean): Promise<boolean> {
  const { deps } = relay;
  let size = deps.settings.batchSize;
  let { rows, claimedAt, ms, position } = await claimBatch(deps, size, oncePerPoll(relay, "leasesCheckedAt"));
  let cursorSince = performance.now();
  for (;;) {
    if (main) relay.claimedInPass += rows.length;
    const full = rows.length === size;
    // A chained claim is timed too (its statement also finalizes the previous batch): in a backlog nearly every claim
    // is chained, and it is there that stale statistics show. Scaled to the configured size, so a grown batch is not
    // mistaken for a slow one.
    if (full) relay.noteFullClaim((ms * deps.settings.batchSize) / size);
    if (full && !signal.aborted) spawnLanes(relay, signal);
    const chain = (main || full) && !signal.aborted && deps.isConnected();
    const nextSize = full ? Math.min(size * 2, relay.maxBatch) : deps.settings.batchSize;
    // A full batch's newest event is where the next claim looks from; rows committed late with an older created_at
    // are found by the first claim that is not full, or by the one after at most CURSOR_RESET_MS.
    const fresh = !full || performance.now() - cursorSince >= CURSOR_RESET_MS;
    if (fresh) cursorSince = performance.now();
    const after = fresh ? undefined : position;
    // The main lane's batch that was not full chains no claim: its marks wait for others' (FINALIZE_LINGER_MS), and the
    // next event's wake-up starts a plain claim at once.
    const trickle = main && !full;
    const leases = chain && !trickle && oncePerPoll(relay, "leasesCheckedAt");
    const record = trickle ? relay.marks : undefined;
    const claimNext = { size: chain && !trickle ? nextSize : 0, after, leases, record };
    const { next } = await publishClaimedBatch(deps, rows, claimedAt, claimNext);
    if (!next || next.rows.length === 0) return full && !next;
    ({ rows, claimedAt, ms, position } = next);
    size = nextSize;
  }
}

/** True at most once per poll interval for each of the relay's rare checks; a true answer starts the next interval. */
function oncePerPoll(relay: Relay, check: "exhaustedCheckedAt" | "leasesCheckedAt"): boolean {
  if (performance.now() - relay[check] < relay.deps.settings.pollIntervalMs) return false;
  relay[check] = performance.now();
  return true;
}

/** Batches while NATS is up (the main lane then also fails exhausted claims, at most once per poll interval). */
async function pass(relay: Relay, signal: AbortSignal, main: boolean): Promise<boolean> {
  const { deps } = relay;
  try {
    const full = deps.isConnected() ? await claimAndPublish(relay, signal, main) : false;
    if (main && !full && oncePerPoll(relay, "exhaustedCheckedAt")) await failExhaustedClaims(deps);
    if (relay.failures > 0) deps.log.info({ failures: relay.failures }, "outbox relay recovered");
    relay.failures = 0;
    return full;
  } catch (error) {
    relay.failures += 1;
    deps.metrics.countRelayError();
    if (relay.failures === 1) deps.log.warn({ err: error }, "outbox relay batch failed; retrying every poll interval");
    return false;
  }
}

/**
 * How long to sleep after a pass that was not full. The poll interval, unless the relay is idle (two passes in a row
 * claimed nothing, NATS up, no failure): then until the next retry time or lease end, at most the idle poll interval.
 * New events need no poll: they wake the relay (in memory, or by NOTIFY from another replica).
 */
async function sleepMs(relay: Relay, emptyPasses: number): Promise<number> {
  const { deps } = relay;
  const { pollIntervalMs, idlePollIntervalMs = 0 } = deps.settings;
  if (idlePollIntervalMs <= pollIntervalMs || emptyPasses < 2 || relay.failures > 0 || !deps.isConnected()) {
    return pollIntervalMs;
  }
  const now = deps.now();
  const next = await nextOutboxDueAt(deps.sql, now).catch(() => now);
  return idleSleepMs(now.getTime(), next, { pollMs: pollIntervalMs, idleMs: idlePollIntervalMs });
}
