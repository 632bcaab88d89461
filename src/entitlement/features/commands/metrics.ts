// entitlement_command_total{action, result}: every idempotent command, the points commands included. idempotency_reused
// counts only real replays; a key reused for a different request counts as a conflict.
import { Counter, type Registry } from "prom-client";

export type CommandAction = "GRANT" | "REVOKE" | "BUNDLE_GRANT" | "EXTEND" | "RESERVE" | "CANCEL";
export type CommandResult = "success" | "conflict" | "error" | "idempotency_reused";

export type CommandMetrics = { record: (action: CommandAction, result: CommandResult) => void };

export function createCommandMetrics(registry: Registry): CommandMetrics {
  const commands = new Counter({
    name: "entitlement_command_total",
    help: "Idempotent commands (grant, revoke, bundle grant, extend, point reserve and cancel) by action and result.",
    labelNames: ["action", "result"] as const,
    registers: [registry],
  });
  return { record: (action, result) => commands.inc({ action, result }) };
}
