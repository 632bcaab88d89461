// entitlement_command_total{action, result} (reference §1.4). Unlike the reference, idempotency_reused counts only
// real replays; a key reused for a different request counts as a conflict.
import { Counter, type Registry } from "prom-client";
import type { Action } from "./model.ts";

export type CommandResult = "success" | "conflict" | "error" | "idempotency_reused";

export type CommandMetrics = { record: (action: Action | "BUNDLE_GRANT" | "EXTEND", result: CommandResult) => void };

export function createCommandMetrics(registry: Registry): CommandMetrics {
  const commands = new Counter({
    name: "entitlement_command_total",
    help: "Grant, revoke, bundle-grant and extend commands by action and result.",
    labelNames: ["action", "result"] as const,
    registers: [registry],
  });
  return { record: (action, result) => commands.inc({ action, result }) };
}
