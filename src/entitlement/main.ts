// Composition root of the Entitlement executable: the only place that reads process.env, opens PostgreSQL
// and NATS, listens and starts the loops. `serve` (the default) migrates, then runs the HTTP API and the background
// workers until SIGTERM/SIGINT; `migrate` applies pending migrations and exits.
import pkg from "../../package.json" with { type: "json" };
import { createKeySource } from "../shared/auth/jwks.ts";
import { createJwtAuthenticator } from "../shared/auth/jwt.ts";
import { buildInfo, versionLine } from "../shared/build-info.ts";
import { dispatch, type Subcommand } from "../shared/cli.ts";
import { natsConnectedMetric } from "../shared/metrics.ts";
import { openNatsLink } from "../shared/nats.ts";
import { systemClock, workerId } from "../shared/runtime.ts";
import { lifecycleSubcommands, type ServiceSpec } from "../shared/service.ts";
import { AUTH_METRICS, createApp } from "./app.ts";
import { type EntitlementConfig, loadEntitlementConfig, SECRET_VARIABLES } from "./config.ts";
import { SCHEMA, schemaText } from "./migrations.ts";
import { entitlementOpsSubcommands } from "./ops/subcommands.ts";
import { tokenSubcommand } from "./ops/tokens.ts";
import { createWakeups } from "./work/wakeups.ts";
import { createWorkers } from "./workers.ts";

const spec: ServiceSpec<EntitlementConfig> = {
  name: "entitlement",
  schema: SCHEMA,
  schemaText,
  loadConfig: loadEntitlementConfig,
  secretKeys: SECRET_VARIABLES,
  version: pkg.version,
  start: async ({ config, sql, log, registry, tracing }) => {
    if (config.auth.disabled) {
      log.warn("ENTITLEMENT_AUTH_DISABLED=true: anyone who reaches the port may grant, revoke and read entitlements");
    }
    // The issuer's keys are fetched at once (not awaited), so the first JWT caller does not wait for them.
    const jwksLog = log.child({ component: "jwks" });
    const keys = config.jwt && createKeySource(config.jwt, { registry, metricPrefix: AUTH_METRICS, log: jwksLog });
    if (keys) void keys.refresh();
    // Commands wake this process's relay and scheduler in memory and tell the other replicas after commit.
    const wakeups = createWakeups({
      sql,
      log: log.child({ component: "wakeups" }),
      retryMs: config.outbox.pollIntervalMs,
    });
    const app = createApp({
      sql,
      log: log.child({ component: "http" }),
      now: systemClock,
      idempotencyTtlHours: config.idempotency.ttlHours,
      auth: { ...config.auth, jwt: config.jwt && keys ? createJwtAuthenticator(config.jwt, keys) : undefined },
      limits: {
        rateLimit: config.limits.rateLimit ?? false,
        requestTimeoutMs: config.limits.requestTimeoutMs,
        queueTimeoutMs: config.limits.queueTimeoutMs,
        slots: config.database.poolMax,
      },
      registry,
      version: pkg.version,
      console: config.console,
      onCommitted: (work) => wakeups.committed(work),
    });
    // NATS connects in the background (retrying forever): the API serves while NATS is down (docs/decisions.md).
    // No async traces: building a stack per request was about a fifth of the relay's CPU (docs/benchmarks.md).
    const link = config.outbox.enabled
      ? openNatsLink({ ...config.nats, name: "entitlement", noAsyncTraces: true }, log.child({ component: "nats" }))
      : undefined;
    if (link) natsConnectedMetric(registry, link.connected);
    const workers = createWorkers({
      config,
      sql,
      log,
      now: systemClock,
      registry,
      workerId: workerId(config.workerId),
      link,
      wakeups,
    });
    const close = async () => {
      await link?.close();
      await tracing.shutdown();
    };
    return { app, workers, close };
  },
};

const env = process.env;
const subcommands: Subcommand[] = [
  // Migrating serves nothing, so it needs no API tokens.
  ...lifecycleSubcommands(spec, env, { migrateConfig: (e) => loadEntitlementConfig(e, { requireAuth: false }) }),
  ...entitlementOpsSubcommands(env),
  tokenSubcommand(),
];

process.exitCode = await dispatch(
  "entitlement",
  process.argv.slice(2),
  subcommands,
  versionLine(buildInfo("entitlement", pkg.version)),
);
