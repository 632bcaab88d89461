// One advisory message: record it and ack; a malformed advisory is acked and dropped with a warning. While the
// database is unreachable the advisory is held (see nats/hold.ts); any other database failure naks it.
import type { JsMsg } from "@nats-io/jetstream";
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { NotificationMetrics } from "../../metrics.ts";
import { holdWhileDatabaseDown } from "../nats/hold.ts";
import { type AdvisoryKind, parseAdvisory } from "./parse.ts";
import { insertNatsDlqEntry } from "./queries.ts";

export type AdvisoryHandlerDeps = {
  sql: Sql;
  log: Logger;
  now: Clock;
  metrics: NotificationMetrics;
  kind: AdvisoryKind;
  /** The source (entitlement, matchmaking) whose consumer reads a stream, for the metric label. */
  sourceOf?: (stream: string) => string | undefined;
  nakDelayMs?: number;
  /** Delay between two tries while the database is unreachable. */
  holdRetryMs?: number;
};

export function createAdvisoryHandler(deps: AdvisoryHandlerDeps) {
  const { log } = deps;
  return async function handleAdvisory(message: JsMsg, signal?: AbortSignal): Promise<void> {
    const parsed = parseAdvisory(message.data, deps.kind);
    try {
      if (!parsed.ok) {
        log.warn({ kind: deps.kind, reason: parsed.reason }, "dropping malformed advisory");
        message.ack();
        return;
      }
      const result = await holdWhileDatabaseDown(
        [message],
        () => insertNatsDlqEntry(deps.sql, parsed.entry, deps.now()),
        { log, signal, retryMs: deps.holdRetryMs },
      );
      if (result.ok) {
        if (result.value > 0) {
          const source = deps.sourceOf?.(parsed.entry.stream ?? "") ?? "unknown";
          deps.metrics.natsDlq.inc({ kind: deps.kind, source });
        }
        log.warn(
          {
            stream_seq: parsed.entry.streamSeq,
            stream: parsed.entry.stream,
            consumer: parsed.entry.consumer,
            kind: parsed.entry.kind,
            deliveries: parsed.entry.deliveries,
            recorded: result.value > 0,
          },
          "JetStream message given up, recorded in notification_nats_dlq",
        );
        message.ack();
      } else {
        log.error({ err: result.error, kind: deps.kind }, "recording advisory failed");
        message.nak(deps.nakDelayMs ?? 2_000);
      }
    } catch (error) {
      log.warn({ err: error }, "could not settle advisory message");
    }
  };
}
