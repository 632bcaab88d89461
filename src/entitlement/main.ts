// The Entitlement executable: the only place that reads process.env. `serve` (the default) migrates, then runs the
// HTTP API and the background workers until SIGTERM/SIGINT; `migrate` applies pending migrations and exits.
import pkg from "../../package.json" with { type: "json" };
import { dispatch, withoutArgs } from "../shared/cli.ts";
import { createRegistry } from "../shared/metrics.ts";
import { connectNats } from "../shared/nats.ts";
import { systemClock, workerId } from "../shared/runtime.ts";
import { runMigrate, runServe, type ServiceSpec, type Worker } from "../shared/service.ts";
import { createApp } from "./app.ts";
import { tokenCommand } from "./auth/command.ts";
import { type EntitlementConfig, loadEntitlementConfig } from "./config.ts";
import { migrations, SCHEMA } from "./migrations.ts";
import { entitlementOpsCommands } from "./ops/commands.ts";
import { createOutboxWorker } from "./outbox/worker.ts";
import { createRetentionWorker } from "./retention/worker.ts";

const spec: ServiceSpec<EntitlementConfig> = {
  name: "entitlement",
  schema: SCHEMA,
  migrations,
  loadConfig: loadEntitlementConfig,
  database: (config) => config.database,
  http: (config) => config.http,
  logLevel: (config) => config.log.level,
  start: async ({ config, sql, log }) => {
    const registry = createRegistry("entitlement", { defaultMetrics: true });
    if (config.auth.disabled) {
      log.warn("ENTITLEMENT_AUTH_DISABLED=true: anyone who reaches the port may grant, revoke and read entitlements");
    }
    const app = createApp({
      sql,
      log: log.child({ component: "http" }),
      now: systemClock,
      idempotencyTtlHours: config.idempotency.ttlHours,
      auth: config.auth,
      limits: {
        rateLimit: config.limits.rateLimit ?? false,
        requestTimeoutMs: config.limits.requestTimeoutMs,
        queueTimeoutMs: config.limits.queueTimeoutMs,
        slots: config.database.poolMax,
      },
      registry,
      version: pkg.version,
    });
    // NATS connects in the background (retrying forever): the API serves while NATS is down (CONTRACT §8.6).
    // Without async traces the relay's CPU per 100,000 events fell from ~4.0 to ~3.1 s (docs/benchmarks.md).
    const nats = config.outbox.enabled
      ? connectNats({ ...config.nats, name: "entitlement", noAsyncTraces: true }, log.child({ component: "nats" }))
      : undefined;
    const workers: Worker[] = [];
    if (nats) {
      workers.push(
        createOutboxWorker({
          sql,
          nats,
          log,
          now: systemClock,
          registry,
          workerId: workerId(config.workerId),
          settings: { ...config.outbox, subject: config.nats.subject },
          stream: config.nats,
        }),
      );
    }
    if (config.retention.enabled) {
      workers.push(createRetentionWorker({ sql, log, now: systemClock, settings: config.retention }));
    }
    const close = async () => {
      // A connection still being made is left to process exit; one that is up is drained.
      const nc = nats && (await Promise.race([nats, Promise.resolve(undefined)]));
      await nc?.drain().catch(() => {});
    };
    return { app, workers, close };
  },
};

const env = process.env;
const code = await dispatch("entitlement", process.argv.slice(2), [
  {
    name: "serve",
    summary: "apply pending migrations, then serve the API and run the workers",
    run: withoutArgs("entitlement", "serve", () => runServe(spec, env)),
  },
  {
    name: "migrate",
    summary: "apply pending migrations and exit",
    // Migrating serves nothing, so it needs no API tokens.
    run: withoutArgs("entitlement", "migrate", () =>
      runMigrate({ ...spec, loadConfig: (e) => loadEntitlementConfig(e, { requireAuth: false }) }, env),
    ),
  },
  ...entitlementOpsCommands(env),
  tokenCommand(),
]);
process.exit(code);
