// `entitlement outbox stats|requeue <event_id>|requeue --failed` (docs/operations.md): the runbook's SQL, made safe.
// Each prints one human-readable line per fact or change and returns its exit code; running one twice is harmless.
import { type Command, EXIT_USAGE } from "../../shared/cli.ts";
import { isUuid } from "../../shared/ids.ts";
import type { OpsDeps } from "../../shared/ops.ts";
import { type OpsEnv, withOps } from "./context.ts";
import { findOutboxStatus, readOutboxStats, requeueFailedOutboxEvents } from "./queries.ts";

export const OUTBOX_USAGE = "usage: entitlement outbox stats | requeue <event_id> | requeue --failed";

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
  if (eventId === undefined) {
    out(rows.length > 0 ? `requeued ${rows.length} FAILED event(s)` : "no FAILED events: nothing to do");
    return 0;
  }
  if (rows.length > 0) return 0;
  const status = await findOutboxStatus(sql, eventId);
  if (status === undefined) {
    out(`no outbox event ${eventId}`);
    return 1;
  }
  out(`event ${eventId} is ${status}, not FAILED: nothing to do`);
  return 0;
}

type OutboxArgs = { op: "stats" } | { op: "requeue"; target: { eventId: string } | "failed" };

function parseOutboxArgs(args: string[]): OutboxArgs | undefined {
  const [op, arg, ...extra] = args;
  if (extra.length > 0) return undefined;
  if (op === "stats" && arg === undefined) return { op };
  if (op === "requeue" && arg === "--failed") return { op, target: "failed" };
  if (op === "requeue" && arg !== undefined && isUuid(arg)) return { op, target: { eventId: arg.toLowerCase() } };
  return undefined;
}

/** The `outbox` subcommand; opens its own PostgreSQL connection from the service configuration in `env`. */
export function outboxCommand(env: OpsEnv = process.env): Command {
  return {
    name: "outbox",
    summary: "outbox stats | requeue <event_id> | requeue --failed   (operator tools, see docs/operations.md)",
    run: async (args) => {
      const parsed = parseOutboxArgs(args);
      if (!parsed) {
        console.error(OUTBOX_USAGE);
        return EXIT_USAGE;
      }
      return withOps(env, `outbox ${args.join(" ")}`, (deps) =>
        parsed.op === "stats" ? printOutboxStats(deps) : requeueOutbox(deps, parsed.target),
      );
    },
  };
}
