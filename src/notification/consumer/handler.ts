// One batch of entitlement events: term() what can never be stored, store the rest in one transaction, ack only
// after the commit, nak the whole batch with a delay when the database fails.
import type { JsMsg } from "@nats-io/jetstream";
import type { Sql } from "../../shared/db.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Clock } from "../../shared/runtime.ts";
import type { NotificationMetrics } from "../metrics.ts";
import { decodeEntitlementEvent, type EventRecord } from "./event.ts";
import { storeEvents } from "./service.ts";

export type EventHandlerDeps = {
  sql: Sql;
  log: Logger;
  clock: Clock;
  metrics: NotificationMetrics;
  /** Called after a commit that created notifications, so delivery starts at once. */
  onCreated: () => void;
  /** Whether the server understands a reason on term() (see nats/server.ts). */
  termTakesReason?: () => boolean;
  /** Redelivery delay after a database failure; jittered so replicas do not retry in lockstep. */
  nakDelayMs?: () => number;
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

export function createEventHandler(deps: EventHandlerDeps) {
  const { log, metrics } = deps;
  return async function handleEventBatch(messages: JsMsg[]): Promise<void> {
    const valid: { message: JsMsg; record: EventRecord }[] = [];
    for (const message of messages) {
      const decoded = decodeEntitlementEvent(message.data);
      if (decoded.ok) {
        valid.push({ message, record: decoded.record });
        continue;
      }
      log.warn({ stream_seq: message.seq, reason: decoded.reason }, "terminating entitlement event");
      settle(log, () => (deps.termTakesReason?.() ? message.term(decoded.reason) : message.term()));
      metrics.events.inc({ result: "terminated" });
    }
    if (valid.length === 0) return;
    try {
      const outcome = await storeEvents(
        deps.sql,
        valid.map((v) => v.record),
        deps.clock(),
      );
      for (const v of valid) settle(log, () => v.message.ack());
      metrics.events.inc({ result: "created" }, outcome.created);
      metrics.events.inc({ result: "duplicate" }, outcome.duplicates);
      if (outcome.duplicates > 0) log.info({ duplicates: outcome.duplicates }, "duplicate entitlement events skipped");
      if (outcome.created > 0) deps.onCreated();
    } catch (error) {
      const delay = (deps.nakDelayMs ?? defaultNakDelay)();
      log.error({ err: error, messages: valid.length, nak_delay_ms: delay }, "storing entitlement events failed");
      for (const v of valid) settle(log, () => v.message.nak(delay));
      metrics.events.inc({ result: "nak" }, valid.length);
    }
  };
}
