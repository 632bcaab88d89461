// How the workers hear of new work without anything global on a commit. A command's transaction sends no NOTIFY (one
// sent inside a transaction makes its commit take the cluster's notification-queue lock, serialising every writer).
// Instead, after a commit:
// - this process's relay and scheduler are woken in memory, at once (`committed`);
// - the other replicas are told by one NOTIFY sent on the pool outside any write transaction, debounced: at most one
//   per channel per `debounceMs`, carrying the earliest due time of the window (docs/architecture.md, "Waking the
//   workers", gives the measured cross-replica latency). A replica ignores its own NOTIFYs (it was woken already).
// The workers' poll interval stays the safety net for a signal lost with a connection.
import type { Sql } from "../../shared/db.ts";
import { listenInBackground } from "../../shared/listen.ts";
import type { Logger } from "../../shared/logger.ts";
import type { CommittedWork } from "../features/commands/committed.ts";

/** The channel of new outbox events (the relay listens); an operator's requeue notifies it too. */
export const OUTBOX_CHANNEL = "entitlement_outbox";
/** The channel of new due work, with its due time in epoch milliseconds (the scheduler listens). */
export const DUE_CHANNEL = "entitlement_due";

export type WakeSource = {
  /** Calls `wake` for every new event, of this process at once and of the others by NOTIFY, until `signal`. */
  onEvents(wake: () => void, signal: AbortSignal): () => Promise<void>;
  /** Calls `wake(at)` (epoch ms) for every new due time; -Infinity on each (re)listen, to catch up. */
  onDue(wake: (at: number) => void, signal: AbortSignal): () => Promise<void>;
};

export type Wakeups = WakeSource & {
  /** Told after a commit that left work for the workers. Never throws. */
  committed(work: CommittedWork): void;
};

/** How long the NOTIFY to the other replicas waits to gather the commits after the first one. */
export const DEFAULT_DEBOUNCE_MS = 5;

type WakeupDeps = { sql: Sql; log: Logger; retryMs: number; debounceMs?: number };

export function createWakeups(deps: WakeupDeps): Wakeups {
  /** Marks this process's NOTIFYs, so that it does not wake itself twice. */
  const self = crypto.randomUUID();
  const local = { events: new Set<() => void>(), due: new Set<(at: number) => void>() };
  const tellOthers = createNotifier(deps, self);

  return {
    committed(work) {
      if (work.events) for (const wake of local.events) wake();
      if (work.dueAt) {
        const at = work.dueAt.getTime();
        for (const wake of local.due) wake(at);
      }
      tellOthers(work);
    },
    onEvents(wake, signal) {
      const onNotify = (payload: string) => {
        if (payload !== self) wake();
      };
      return listen(
        deps,
        { set: local.events, listener: wake, channel: OUTBOX_CHANNEL, onNotify, onListen: wake },
        signal,
      );
    },
    onDue(wake, signal) {
      const onNotify = (payload: string) => {
        const [at, from] = payload.split(" ");
        if (from !== self) wake(Number(at));
      };
      const onListen = () => wake(Number.NEGATIVE_INFINITY);
      return listen(deps, { set: local.due, listener: wake, channel: DUE_CHANNEL, onNotify, onListen }, signal);
    },
  };
}

/**
 * The debounced NOTIFY to the other replicas: the commits of one window told in one statement, after the first one,
 * with the earliest due time of the window.
 */
function createNotifier(deps: WakeupDeps, self: string): (work: CommittedWork) => void {
  const debounceMs = deps.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  let eventsPending = false;
  let duePending = Number.POSITIVE_INFINITY;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failures = 0;

  const flush = async () => {
    timer = undefined;
    const events = eventsPending ? self : null;
    const due = Number.isFinite(duePending) ? `${duePending} ${self}` : null;
    eventsPending = false;
    duePending = Number.POSITIVE_INFINITY;
    try {
      // Its own short transaction on the pool: the commits it announces are done, and nothing waits on it.
      await deps.sql`
        select case when ${events}::text is not null then pg_notify(${OUTBOX_CHANNEL}, ${events}::text) end,
               case when ${due}::text is not null then pg_notify(${DUE_CHANNEL}, ${due}::text) end`;
      failures = 0;
    } catch (error) {
      // The others fall back on their poll interval; the next commit tries again.
      if (++failures === 1) deps.log.warn({ err: error }, "could not tell the other replicas of new work");
    }
  };

  return (work) => {
    if (work.events) eventsPending = true;
    if (work.dueAt) duePending = Math.min(duePending, work.dueAt.getTime());
    if (!timer && (eventsPending || Number.isFinite(duePending))) timer = setTimeout(flush, debounceMs);
  };
}

/** Adds `listener` to this process's wake-ups and LISTENs on `channel` until `signal`; returns the stop. */
function listen<L>(
  deps: WakeupDeps,
  l: { set: Set<L>; listener: L; channel: string; onNotify: (payload: string) => void; onListen: () => void },
  signal: AbortSignal,
): () => Promise<void> {
  l.set.add(l.listener);
  const stop = listenInBackground(deps.sql, {
    channel: l.channel,
    onNotify: l.onNotify,
    onListen: l.onListen,
    log: deps.log,
    retryMs: deps.retryMs,
    signal,
  });
  return async () => {
    l.set.delete(l.listener);
    await stop();
  };
}
