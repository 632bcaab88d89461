// What every entitlement operator command opens: the configuration from the environment (no API tokens needed: an
// operator command serves nothing) and one PostgreSQL connection.
import { type OpsDeps, withOpsDatabase } from "../../shared/ops.ts";
import { type EntitlementConfig, loadEntitlementConfig } from "../config.ts";
import { SCHEMA } from "../migrations.ts";

export type OpsEnv = Record<string, string | undefined>;

/** Runs `body` with the configuration and a PostgreSQL connection (see withOpsDatabase). */
export function withOps(
  env: OpsEnv,
  label: string,
  body: (ctx: OpsDeps & { config: EntitlementConfig }) => Promise<number>,
): Promise<number> {
  const spec = {
    program: "entitlement",
    label,
    schema: SCHEMA,
    loadConfig: () => loadEntitlementConfig(env, { requireAuth: false }),
    databaseUrl: (c: EntitlementConfig) => c.database.url,
  };
  return withOpsDatabase(spec, body);
}
