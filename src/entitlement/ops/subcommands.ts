// Every operator subcommand of the entitlement executable, for `dispatch` in main.ts (docs/operations.md).
import type { Subcommand } from "../../shared/cli.ts";
import { healthcheckSubcommand } from "../../shared/healthcheck.ts";
import { loadEntitlementConfig } from "../config.ts";
import { bulkSubcommand } from "./bulk.ts";
import { outboxSubcommand } from "./outbox.ts";
import { partitionsSubcommand } from "./partitions.ts";
import { pointsSubcommand } from "./points.ts";

export function entitlementOpsSubcommands(env: Record<string, string | undefined> = process.env): Subcommand[] {
  return [
    outboxSubcommand(env),
    pointsSubcommand(env),
    partitionsSubcommand(env),
    bulkSubcommand(env),
    healthcheckSubcommand("entitlement", () => loadEntitlementConfig(env, { requireAuth: false }).http.port),
  ];
}
