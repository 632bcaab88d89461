// Every operator command of the notification executable, for `dispatch` in main.ts (CONTRACT §7).
import type { Command } from "../../shared/cli.ts";
import type { OpsEnv } from "./context.ts";
import { dlqCommand } from "./dlq.ts";
import { healthcheckCommand } from "./healthcheck.ts";
import { natsDlqCommand } from "./nats-dlq.ts";

export function notificationOpsCommands(env: OpsEnv = process.env): Command[] {
  return [dlqCommand(env), natsDlqCommand(env), healthcheckCommand(env)];
}
