// Every operator command of the notification executable, for `dispatch` in main.ts (docs/operations.md).
import type { Command } from "../../shared/cli.ts";
import { healthcheckCommand } from "../../shared/healthcheck.ts";
import { loadNotificationConfig } from "../config.ts";
import type { OpsEnv } from "./context.ts";
import { dlqCommand } from "./dlq.ts";
import { endpointsCommand } from "./endpoints.ts";
import { natsDlqCommand } from "./nats-dlq.ts";

export function notificationOpsCommands(env: OpsEnv = process.env): Command[] {
  return [
    dlqCommand(env),
    natsDlqCommand(env),
    endpointsCommand(env),
    healthcheckCommand("notification", () => loadNotificationConfig(env).http.port),
  ];
}
