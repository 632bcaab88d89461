// One batch of events of one kind, whatever the kind (its EventHandler decodes them): term() what can never be
// stored, store the rest in one transaction, ack only after the commit. While the database is unreachable the batch
// is held (see nats/hold.ts). When the data of some event fails the transaction, the events are stored one by one and
// only the culprit is terminated; any other failure naks the whole batch with a delay, so a batch that can never be
// stored ends at max_deliver and its advisory. Each message's consume span ends with how it was settled.
import type { JsMsg } from "@nats-io/jetstream";
import { context } from "@opentelemetry/api";
import { isDataError, type Sql } from "../../../shared/db.ts";
import { parseInstant } from "../../../shared/instant.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { NotificationMetrics } from "../../metrics.ts";
import { holdWhileDatabaseDown } from "../nats/hold.ts";
import type { EventHandler, NotificationDraft, StoredEvent } from "./handler.ts";
import { type Lease, type LeasedRow, storeProcessedEvents } from "./queries.ts";
import { type ConsumeSpan, endConsumeSpan, startConsumeSpan } from "./spans.ts";

/**
 * `created` and `duplicates` count events; `notifications` counts the rows the created events yielded; `leased` are
 * those stored leased to this process's delivery worker (absent or empty without a lease).
 */
export type StoreOutcome = { created: number; duplicates: number; notifications: number; leased?: LeasedRow[] };

/** A notification stored leased to this process's delivery worker, with what its delivery needs. */
export type HandedOff = LeasedRow &
  Pick<NotificationDraft, "type" | "payload"> & { occurredAt: Date; createdAt: Date; traceparent: string | null };

/**
 * This process's delivery worker, taking notifications as they are stored (work/delivery/worker.ts): the batch is
 * stored leased to it when it has a free slot for each, and handed to it after the commit, so it sends them without
 * claiming them (docs/decisions.md ADR-38).
 */
export type Handoff = {
  /** A lease for `count` notifications when the worker has that many free slots now; undefined otherwise. */
  lease(count: number): Lease | undefined;
  /** Sends the notifications stored under that lease. */
  adopt(notifications: HandedOff[]): void;
};

/** The same event may appear twice in one batch (a re-publish without Nats-Msg-Id): keep its first copy. */
function firstOfEach(events: StoredEvent[]): StoredEvent[] {
  const seen = new Set<string>();
  return events.filter((e) => !seen.has(e.eventId) && seen.add(e.eventId));
}

/**
 * Turns a batch of valid events into notifications in one statement, exactly once per event id: an event counts as
 * processed exactly when all its notifications exist.
 */
export async function storeEvents(sql: Sql, events: StoredEvent[], now: Date, lease?: Lease): Promise<StoreOutcome> {
  const stored = await storeProcessedEvents(sql, { events: firstOfEach(events), now, lease });
  return { ...stored, duplicates: events.length - stored.created };
}

export type BatchHandlerDeps = {
  handler: EventHandler;
  sql: Sql;
  log: Logger;
  now: Clock;
  metrics: NotificationMetrics;
  /**
   * Called after a commit that created notifications, so delivery starts at once; `handedOff` when every one of them
   * went to the delivery worker already (`handoff`), so it need not claim.
   */
  onCreated: (handedOff?: boolean) => void;
  /** This process's delivery worker, when it takes notifications as they are stored. */
  handoff?: Handoff;
  /** Called after that commit with the users of the batch, so their live streams read what is new. */
  onStored?: (userIds: string[]) => void;
  /** Whether the server understands a reason on term() (see nats/server.ts). */
  termTakesReason?: () => boolean;
  /** Redelivery delay after a database failure; jittered so replicas do not retry in lockstep. */
  nakDelayMs?: () => number;
  /** Stored-events writer (tests replace it to simulate an outage). */
  store?: typeof storeEvents;
  /** Delay between two tries while the database is unreachable. */
  holdRetryMs?: number;
};

const defaultNakDelay = () => 1_000 + Math.floor(Math.random() * 4_000);

/** Settling a message can throw when the connection just closed; the server redelivers it after ack_wait anyway. */
function settle(log: Logger, action: () => void): void {
  try {
    action();
  } catch (error) {
    log.warn({ err: error }, "could not settle JetStream message");
  }
}

type Valid = { message: JsMsg; event: StoredEvent; span: ConsumeSpan };
type Stored = { ok: true } | { ok: false; error: unknown };

export function createBatchHandler(deps: BatchHandlerDeps) {
  const batch: Batch = { deps, source: deps.handler.source, store: deps.store ?? storeEvents };
  return async function handleEventBatch(messages: JsMsg[], signal?: AbortSignal): Promise<void> {
    const last = messages.at(-1);
    if (last) deps.metrics.consumerPending.set({ source: batch.source }, last.info.pending);
    const valid = decodeAll(batch, messages);
    if (valid.length === 0) return;
    const result = await storeAndAck(batch, valid, signal);
    if (result.ok) return;
    if (isDataError(result.error) && !signal?.aborted) return isolate(batch, valid, signal);
    nak(batch, valid, result.error, signal);
  };
}

/** What every step of a batch needs: the deps, the kind's source label, the writer. */
type Batch = { deps: BatchHandlerDeps; source: string; store: typeof storeEvents };

/** Terminates a message that can never be stored (inside its span, so the log line carries its trace). */
function terminate({ deps, source }: Batch, message: JsMsg, span: ConsumeSpan, reason: string): void {
  context.with(span.context, () => deps.log.warn({ stream_seq: message.seq, reason }, `terminating ${source} event`));
  settle(deps.log, () => (deps.termTakesReason?.() ? message.term(reason) : message.term()));
  endConsumeSpan(span, "term", reason);
  deps.metrics.events.inc({ source, result: "terminated" });
}

/** Terminates what cannot be decoded into a storable event; returns the rest. */
function decodeAll(batch: Batch, messages: JsMsg[]): Valid[] {
  const valid: Valid[] = [];
  for (const message of messages) {
    const span = startConsumeSpan(message);
    const decoded = batch.deps.handler.decode(message.data);
    if (decoded.ok) valid.push({ message, event: { ...decoded.event, traceparent: span.traceparent }, span });
    else terminate(batch, message, span, decoded.reason);
  }
  return valid;
}

/** Stores the events in one transaction, holding them while the database is down; acks them after the commit. */
async function storeAndAck({ deps, source, store }: Batch, valid: Valid[], signal?: AbortSignal): Promise<Stored> {
  const { log, metrics } = deps;
  const events = valid.map((v) => v.event);
  const count = events.reduce((n, e) => n + e.notifications.length, 0);
  let storedAt = deps.now();
  const result = await holdWhileDatabaseDown(
    valid.map((v) => v.message),
    () => {
      storedAt = deps.now();
      return store(deps.sql, events, storedAt, deps.handoff?.lease(count));
    },
    { log, signal, retryMs: deps.holdRetryMs },
  );
  if (!result.ok) return result;
  const { created, duplicates, notifications, leased = [] } = result.value;
  for (const v of valid) {
    settle(log, () => v.message.ack());
    endConsumeSpan(v.span, "ack");
  }
  metrics.events.inc({ source, result: "created" }, created);
  metrics.events.inc({ source, result: "duplicate" }, duplicates);
  metrics.notificationsCreated.inc({ source }, notifications);
  if (duplicates > 0) log.info({ duplicates }, `duplicate ${source} events skipped`);
  if (leased.length > 0) deps.handoff?.adopt(handedOff(events, leased, storedAt));
  if (notifications > 0) {
    deps.onCreated(leased.length === notifications);
    deps.onStored?.(valid.flatMap((v) => v.event.notifications.map((n) => n.userId)));
  }
  return { ok: true };
}

/** The leased rows with what their delivery needs, from the events they were stored from. */
function handedOff(events: StoredEvent[], leased: LeasedRow[], createdAt: Date): HandedOff[] {
  const drafts = new Map(
    events.flatMap((e) => e.notifications.map((n) => [`${e.eventId} ${n.userId}`, { event: e, draft: n }] as const)),
  );
  return leased.flatMap((row) => {
    const found = drafts.get(`${row.eventId} ${row.userId}`);
    if (!found) return [];
    const { draft, event } = found;
    const occurredAt = parseInstant(draft.occurredAt) ?? new Date(draft.occurredAt);
    return [
      {
        ...row,
        type: draft.type,
        occurredAt,
        payload: draft.payload,
        createdAt,
        traceparent: event.traceparent ?? null,
      },
    ];
  });
}

function nak({ deps, source }: Batch, valid: Valid[], error: unknown, signal?: AbortSignal): void {
  const delay = signal?.aborted ? 0 : (deps.nakDelayMs ?? defaultNakDelay)();
  deps.log.error({ err: error, messages: valid.length, nak_delay_ms: delay }, `storing ${source} events failed`);
  for (const v of valid) {
    settle(deps.log, () => (delay > 0 ? v.message.nak(delay) : v.message.nak()));
    endConsumeSpan(v.span, "nak");
  }
  deps.metrics.events.inc({ source, result: "nak" }, valid.length);
}

/**
 * The batch's transaction failed because of some event's data (an SQLSTATE of class 22, 23 or 54): each event is
 * stored on its own, so one poison message costs only itself. It is terminated (and so reaches
 * notification_nats_dlq at once) instead of taking the valid events fetched with it to max_deliver.
 */
async function isolate(batch: Batch, valid: Valid[], signal?: AbortSignal): Promise<void> {
  for (const v of valid) {
    const result = await storeAndAck(batch, [v], signal);
    if (result.ok) continue;
    if (isDataError(result.error) && !signal?.aborted) {
      const code = (result.error as { code?: string }).code;
      terminate(batch, v.message, v.span, `unstorable ${batch.source} event (SQLSTATE ${code})`);
    } else nak(batch, [v], result.error, signal);
  }
}
