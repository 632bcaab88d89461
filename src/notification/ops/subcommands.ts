// Every operator subcommand of the notification executable, for `dispatch` in main.ts (docs/operations.md).
import type { Subcommand } from "../../shared/cli.ts";
import { healthcheckSubcommand } from "../../shared/healthcheck.ts";
import { loadNotificationConfig } from "../config.ts";
import type { OpsEnv } from "./context.ts";
import { dlqSubcommand } from "./dlq.ts";
import { endpointsSubcommand } from "./endpoints.ts";
import { natsDlqSubcommand } from "./nats-dlq.ts";

export function notificationOpsSubcommands(env: OpsEnv = process.env): Subcommand[] {
  return [
    dlqSubcommand(env),
    natsDlqSubcommand(env),
    endpointsSubcommand(env),
    healthcheckSubcommand("notification", () => loadNotificationConfig(env).http.port),
  ];
}
