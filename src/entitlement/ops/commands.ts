// Every operator command of the entitlement executable, for `dispatch` in main.ts (CONTRACT §7).
import type { Command } from "../../shared/cli.ts";
import { healthcheckCommand } from "./healthcheck.ts";
import { outboxCommand } from "./outbox.ts";

export function entitlementOpsCommands(env: Record<string, string | undefined> = process.env): Command[] {
  return [outboxCommand(env), healthcheckCommand(env)];
}
