// `notification dlq list|requeue <notification_id>` (docs/operations.md): read the delivery DLQ and give a FAILED
// notification a fresh attempt budget. Requeueing twice is harmless: the second run finds nothing FAILED.
import { EXIT_USAGE, type Subcommand } from "../../shared/cli.ts";
import { isUuid } from "../../shared/ids.ts";
import type { OpsDeps } from "../../shared/ops.ts";
import { type OpsEnv, parseLimit, withOps } from "./context.ts";
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

export function dlqSubcommand(env: OpsEnv = process.env): Subcommand {
  return {
    name: "dlq",
    summary: "dlq list [--limit N] | requeue <notification_id>   (delivery DLQ, see docs/operations.md)",
    run: async (args) => {
      const [op, ...rest] = args;
      const limit = op === "list" ? parseLimit(rest) : undefined;
      const id = op === "requeue" && rest.length === 1 && isUuid(rest[0] ?? "") ? rest[0]?.toLowerCase() : undefined;
      if (limit === undefined && id === undefined) {
        console.error(DLQ_USAGE);
        return EXIT_USAGE;
      }
      return withOps(env, `dlq ${args.join(" ")}`, (deps) =>
        id !== undefined ? requeueNotification(deps, id) : printNotificationDlq(deps, { limit: limit ?? 100 }),
      );
    },
  };
}
