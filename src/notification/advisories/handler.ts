// One advisory message: record it and ack; a malformed advisory is acked and dropped with a warning; a database
// failure naks it so JetStream offers it again.
import type { JsMsg } from "@nats-io/jetstream";
import type { Sql } from "../../shared/db.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Clock } from "../../shared/runtime.ts";
import type { NotificationMetrics } from "../metrics.ts";
import { type AdvisoryKind, parseAdvisory } from "./parse.ts";
import { insertNatsDlqEntry } from "./queries.ts";

export type AdvisoryHandlerDeps = {
  sql: Sql;
  log: Logger;
  clock: Clock;
  metrics: NotificationMetrics;
  kind: AdvisoryKind;
  nakDelayMs?: number;
};

export function createAdvisoryHandler(deps: AdvisoryHandlerDeps) {
  const { log } = deps;
  return async function handleAdvisory(message: JsMsg): Promise<void> {
    const parsed = parseAdvisory(message.data, deps.kind);
    try {
      if (!parsed.ok) {
        log.warn({ kind: deps.kind, reason: parsed.reason }, "dropping malformed advisory");
        message.ack();
        return;
      }
      try {
        const added = await insertNatsDlqEntry(deps.sql, parsed.entry, deps.clock());
        if (added > 0) deps.metrics.natsDlq.inc({ kind: deps.kind });
        log.warn(
          { ...parsed.entry, recorded: added > 0 },
          "JetStream message given up, recorded in notification_nats_dlq",
        );
        message.ack();
      } catch (error) {
        log.error({ err: error, kind: deps.kind }, "recording advisory failed");
        message.nak(deps.nakDelayMs ?? 2_000);
      }
    } catch (error) {
      log.warn({ err: error }, "could not settle advisory message");
    }
  };
}
