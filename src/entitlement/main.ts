// The Entitlement executable: the only place that reads process.env. `serve` (the default) migrates, then runs the
// HTTP API and the background workers until SIGTERM/SIGINT; `migrate` applies pending migrations and exits.
import pkg from "../../package.json" with { type: "json" };
import { dispatch } from "../shared/cli.ts";
import { createRegistry } from "../shared/metrics.ts";
import { systemClock } from "../shared/runtime.ts";
import { runMigrate, runServe, type ServiceSpec, type Worker } from "../shared/service.ts";
import { createApp } from "./app.ts";
import { type EntitlementConfig, loadEntitlementConfig } from "./config.ts";
import { migrations, SCHEMA } from "./migrations.ts";

const spec: ServiceSpec<EntitlementConfig> = {
  name: "entitlement",
  schema: SCHEMA,
  migrations,
  loadConfig: loadEntitlementConfig,
  database: (config) => config.database,
  http: (config) => config.http,
  logLevel: (config) => config.log.level,
  start: async ({ config, sql, log }) => {
    const app = createApp({
      sql,
      log: log.child({ component: "http" }),
      now: systemClock,
      idempotencyTtlHours: config.idempotency.ttlHours,
      registry: createRegistry("entitlement", { defaultMetrics: true }),
      version: pkg.version,
    });
    // Background loops of this process. The outbox relay and the retention worker are added here.
    const workers: Worker[] = [];
    return { app, workers, close: async () => {} };
  },
};

const env = process.env;
const code = await dispatch("entitlement", process.argv.slice(2), [
  {
    name: "serve",
    summary: "apply pending migrations, then serve the API and run the workers",
    run: () => runServe(spec, env),
  },
  { name: "migrate", summary: "apply pending migrations and exit", run: () => runMigrate(spec, env) },
]);
process.exit(code);
