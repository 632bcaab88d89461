// Every operator command of the entitlement executable, for `dispatch` in main.ts (docs/operations.md).
import type { Command } from "../../shared/cli.ts";
import { healthcheckCommand } from "../../shared/healthcheck.ts";
import { loadEntitlementConfig } from "../config.ts";
import { bulkCommand } from "./bulk.ts";
import { outboxCommand } from "./outbox.ts";
import { partitionsCommand } from "./partitions.ts";
import { pointsCommand } from "./points.ts";

export function entitlementOpsCommands(env: Record<string, string | undefined> = process.env): Command[] {
  return [
    outboxCommand(env),
    pointsCommand(env),
    partitionsCommand(env),
    bulkCommand(env),
    healthcheckCommand("entitlement", () => loadEntitlementConfig(env, { requireAuth: false }).http.port),
  ];
}
