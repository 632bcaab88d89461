// `notification dlq list|requeue <notification_id>` (docs/operations.md): read the delivery DLQ and give a FAILED
// notification a fresh attempt budget. Requeueing twice is harmless: the second run finds nothing FAILED.
import type { Subcommand } from "../../shared/cli.ts";
import { operation, positionals, uuidArgument } from "../../shared/cli-args.ts";
import type { OpsDeps } from "../../shared/ops.ts";
import { type OpsEnv, opsSubcommand, parseLimit } from "./context.ts";
import { listNotificationDlq, requeueDlqNotification } from "./queries.ts";

export const DLQ_USAGE = "usage: notification dlq list [--limit N] | requeue <notification_id>";

export async function printNotificationDlq({ sql, out }: OpsDeps, options: { limit: number }): Promise<number> {
  const rows = await listNotificationDlq(sql, options);
  for (const r of rows) {
    out(
      `${r.created_at.toISOString()} notification=${r.notification_id} event=${r.event_id} ` +
        `user=${r.user_id ?? "?"} status=${r.status ?? "deleted"} attempts=${r.attempt_count ?? "?"} ` +
        `error=${JSON.stringify(r.error_message)}`,
    );
  }
  out(rows.length === 0 ? "notification DLQ is empty" : `${rows.length} notification(s) in the DLQ`);
  return 0;
}

export async function requeueNotification({ sql, out }: OpsDeps, notificationId: string): Promise<number> {
  const result = await requeueDlqNotification(sql, notificationId);
  switch (result.kind) {
    case "not-found":
      out(`no notification ${notificationId} (it may have been deleted by retention)`);
      return 1;
    case "not-failed":
      out(`notification ${notificationId} is ${result.status}, not FAILED: nothing to do`);
      return 0;
    case "requeued":
      out(
        `requeued ${notificationId}: FAILED -> PENDING, attempt_count ${result.previousAttempts} -> 0, ` +
          `${result.dlqRowsDeleted} notification_dlq row(s) deleted`,
      );
      return 0;
  }
}

type DlqArgs = { op: "list"; limit: number } | { op: "requeue"; id: string };

function parseDlqArgs(args: string[]): DlqArgs {
  const [first, ...rest] = args;
  const op = operation(first, ["list", "requeue"] as const);
  if (op === "list") return { op, limit: parseLimit(rest) };
  const [id] = positionals(rest, ["<notification_id>"]) as [string];
  return { op, id: uuidArgument("<notification_id>", id) };
}

export function dlqSubcommand(env: OpsEnv = process.env): Subcommand {
  return opsSubcommand(env, {
    name: "dlq",
    summary: "dlq list [--limit N] | requeue <notification_id>   (delivery DLQ, see docs/operations.md)",
    usage: DLQ_USAGE,
    parse: parseDlqArgs,
    run: (deps, parsed) =>
      parsed.op === "requeue" ? requeueNotification(deps, parsed.id) : printNotificationDlq(deps, parsed),
  });
}
