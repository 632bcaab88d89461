// `entitlement outbox stats|requeue <event_id>|requeue --failed` (docs/operations.md): the runbook's SQL, made safe.
// Each prints one human-readable line per fact or change and returns its exit code; running one twice is harmless.
import type { Subcommand } from "../../shared/cli.ts";
import type { OpsDeps } from "../../shared/ops.ts";
import { type OpsEnv, requeueOutcome, statsOrRequeueSubcommand, statsOrRequeueUsage } from "./context.ts";
import { findOutboxStatus, readOutboxStats, requeueFailedOutboxEvents } from "./queries.ts";

export const OUTBOX_USAGE = statsOrRequeueUsage("outbox", "<event_id>");

export async function printOutboxStats({ sql, out }: OpsDeps): Promise<number> {
  const s = await readOutboxStats(sql);
  out(
    `outbox events: PENDING=${s.byStatus.PENDING} IN_FLIGHT=${s.byStatus.IN_FLIGHT} ` +
      `PUBLISHED=${s.byStatus.PUBLISHED} FAILED=${s.byStatus.FAILED}`,
  );
  out(
    s.oldestUnpublishedAgeSeconds === null
      ? "oldest unpublished event: none"
      : `oldest unpublished event: ${s.oldestUnpublishedEventId}, ${s.oldestUnpublishedAgeSeconds.toFixed(1)}s old`,
  );
  out(`failed events: ${s.byStatus.FAILED}${s.byStatus.FAILED > 0 ? " (see `outbox requeue`)" : ""}`);
  return 0;
}

/** Requeues one FAILED event (`eventId`) or all of them (`"failed"`). */
export async function requeueOutbox({ sql, out }: OpsDeps, target: { eventId: string } | "failed"): Promise<number> {
  const eventId = target === "failed" ? undefined : target.eventId;
  const rows = await requeueFailedOutboxEvents(sql, { eventId });
  for (const r of rows) {
    out(
      `requeued ${r.event_id} (${r.event_type} ${r.aggregate_key}): FAILED -> PENDING, attempt_count ` +
        `${r.previous_attempts} -> 0, last error: ${r.last_error ?? "none"}`,
    );
  }
  const status = () => (eventId === undefined ? Promise.resolve(undefined) : findOutboxStatus(sql, eventId));
  return requeueOutcome(out, { id: eventId, requeued: rows.length, noun: "event", missing: "outbox event", status });
}

/** The `outbox` subcommand; opens its own PostgreSQL connection from the service configuration in `env`. */
export function outboxSubcommand(env: OpsEnv = process.env): Subcommand {
  return statsOrRequeueSubcommand(env, {
    name: "outbox",
    idName: "<event_id>",
    stats: printOutboxStats,
    requeue: (deps, id) => requeueOutbox(deps, id ? { eventId: id } : "failed"),
  });
}
