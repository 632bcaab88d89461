// The life cycle both executables share: parse configuration (exit 78 on any problem), apply migrations under the
// advisory lock, serve HTTP, run background workers, and on SIGTERM/SIGINT stop taking requests, let workers finish
// their batch, close connections and exit 0.
import type { AnyElysia } from "elysia";
import { type BackoffPolicy, backoffMs } from "./backoff.ts";
import { type Subcommand, withConfig } from "./cli.ts";
import { withoutArgs } from "./cli-args.ts";
import { createSql, isDatabaseNotUpYet, type Sql } from "./db.ts";
import { createLogger, type Logger } from "./logger.ts";
import { createRegistry } from "./metrics.ts";
import { type MigrationLog, migrate, type SchemaText } from "./migrate.ts";
import { onShutdownSignal, type Worker } from "./runtime.ts";
import { installTracing } from "./tracing.ts";

export type Running = {
  app: AnyElysia;
  workers: Worker[];
  /** Closes what `start` opened besides the database (NATS, timers), after the workers stopped. */
  close: () => Promise<void>;
  /** Ends long-lived responses (live streams) at SIGTERM, so that the server's stop does not wait for them. */
  beforeStop?: () => void;
};

/** What the life cycle reads of a service's configuration (both services' loaders return these as they are). */
export type ServiceConfig = {
  /** `migrationUrl` (default `url`) is the role that runs migrations; `url` may then be a DML-only runtime role. */
  database: { url: string; migrationUrl?: string; poolMax: number; startTimeoutMs?: number };
  http: { host: string; port: number };
  log: { level: string };
  tracing: { exportSpans: boolean };
};

export type ServiceSpec<C extends ServiceConfig> = {
  name: string;
  schema: string;
  /** The numbered migrations and the SQL functions applied after them. */
  schemaText: SchemaText;
  loadConfig: (env: Record<string, string | undefined>) => C;
  /** The service's secret variable names, redacted from its logs (see createLogger). */
  secretKeys?: readonly string[];
  /** The version its metrics and spans carry. */
  version: string;
  /** Builds the app and its workers from the opened resources; `tracing` is shut down by the service's `close`. */
  start: (ctx: { config: C; sql: Sql; log: Logger } & Observability) => Promise<Running>;
};

type Env = Record<string, string | undefined>;

type Observability = ReturnType<typeof startObservability>;

/** A service's metrics registry (default metrics included) and its tracing, both named for the service. */
function startObservability(name: string, options: { version: string; exportSpans: boolean; log: Logger }) {
  const registry = createRegistry(name, { defaultMetrics: true });
  const tracing = installTracing({ service: name, version: options.version, exportSpans: options.exportSpans });
  if (tracing.exporting) options.log.info("spans are exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)");
  return { registry, tracing };
}

/** `migrate`: applies pending migrations and returns 0 (1 when they fail, 78 on invalid configuration). */
export function runMigrate<C extends ServiceConfig>(spec: ServiceSpec<C>, env: Env): Promise<number> {
  return withConfig(
    spec.name,
    () => spec.loadConfig(env),
    (config) => migrateOnly(spec, config),
  );
}

/** `serve`: runs until SIGTERM/SIGINT, which exits the process (78 on invalid configuration). */
export function runServe<C extends ServiceConfig>(spec: ServiceSpec<C>, env: Env): Promise<number> {
  return withConfig(
    spec.name,
    () => spec.loadConfig(env),
    (config) => serve(spec, config),
  );
}

/**
 * The `serve` (the default) and `migrate` subcommands of a service's executable. `migrateConfig` loads the
 * configuration for `migrate` when it needs less than `serve` (Entitlement: no API tokens).
 */
export function lifecycleSubcommands<C extends ServiceConfig>(
  spec: ServiceSpec<C>,
  env: Env,
  options: { migrateConfig?: ServiceSpec<C>["loadConfig"] } = {},
): Subcommand[] {
  const migrateSpec = options.migrateConfig ? { ...spec, loadConfig: options.migrateConfig } : spec;
  return [
    {
      name: "serve",
      summary: "apply pending migrations, then serve HTTP and run the workers",
      run: withoutArgs(spec.name, "serve", () => runServe(spec, env)),
    },
    {
      name: "migrate",
      summary: "apply pending migrations and exit",
      run: withoutArgs(spec.name, "migrate", () => runMigrate(migrateSpec, env)),
    },
  ];
}

async function migrateOnly<C extends ServiceConfig>(spec: ServiceSpec<C>, config: C): Promise<number> {
  const log = createLogger({ level: config.log.level, service: spec.name, secretKeys: spec.secretKeys });
  const db = config.database;
  const sql = createSql({
    url: db.migrationUrl ?? db.url,
    schema: spec.schema,
    max: 1,
    applicationName: `${spec.name}-migrate`,
  });
  try {
    const applied = await migrate(sql, spec.schema, spec.schemaText, log);
    log.info({ applied, schema: spec.schema }, applied.length ? "migrations applied" : "schema is up to date");
    return 0;
  } catch (error) {
    log.error({ err: error }, "migration failed");
    return 1;
  } finally {
    await sql.end({ timeout: 5 });
    log.flush();
  }
}

/**
 * Applies the migrations at `serve`: through the pool when one role does everything, else through a short-lived
 * connection of the migration role, so the runtime role needs no DDL right.
 */
async function migrateWith<C extends ServiceConfig>(
  spec: ServiceSpec<C>,
  db: { url: string; migrationUrl?: string },
  pool: Sql,
  log: MigrationLog,
) {
  if (!db.migrationUrl || db.migrationUrl === db.url) return migrate(pool, spec.schema, spec.schemaText, log);
  const owner = createSql({
    url: db.migrationUrl,
    schema: spec.schema,
    max: 1,
    applicationName: `${spec.name}-migrate`,
  });
  try {
    return await migrate(owner, spec.schema, spec.schemaText, log);
  } finally {
    await owner.end({ timeout: 5 });
  }
}

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The start's waits for a database not up yet: 0.25 s doubling to 5 s, no jitter (one process, one connection). */
const START_BACKOFF: BackoffPolicy = {
  baseMs: 250,
  maxMs: 5_000,
  minMs: 0,
  exponentBase: 2,
  jitterMin: 1,
  jitterMax: 1,
};

/**
 * The migrations at start, tried again with backoff while the database is only not up yet (isDatabaseNotUpYet: starting,
 * shutting down or recovering, as a failover's old primary rejoining, or its port refusing), for at most
 * `startTimeoutMs`: a service started beside a server that is still starting comes up once it does instead of exiting.
 * A refused login, a missing database or a migration that fails ends the start at once. Each wait is one warning with
 * the SQLSTATE, never the URL.
 */
async function migrateAtStart<C extends ServiceConfig>(spec: ServiceSpec<C>, config: C, pool: Sql, log: Logger) {
  const db = config.database;
  const deadline = performance.now() + (db.startTimeoutMs ?? 0);
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrateWith(spec, db, pool, log);
    } catch (error) {
      const waitMs = backoffMs(START_BACKOFF, attempt);
      if (!isDatabaseNotUpYet(error) || performance.now() + waitMs > deadline) throw error;
      const code = (error as { code?: unknown }).code;
      log.warn({ code, reason: errorMessage(error), attempt, retry_in_ms: waitMs }, "waiting for the database");
      await Bun.sleep(waitMs);
    }
  }
}

async function serve<C extends ServiceConfig>(spec: ServiceSpec<C>, config: C): Promise<number> {
  const log = createLogger({ level: config.log.level, service: spec.name, secretKeys: spec.secretKeys });
  const db = config.database;
  const sql = createSql({ url: db.url, schema: spec.schema, max: db.poolMax, applicationName: spec.name });
  let applied: string[];
  try {
    applied = await migrateAtStart(spec, config, sql, log);
  } catch (error) {
    // A login refused, a database that is not there, migrations that fail: nothing can run. One line that says why
    // (the SQLSTATE and the server's message, never the URL), exit 1; not an uncaught exception and its stack.
    log.fatal({ code: (error as { code?: unknown })?.code, reason: errorMessage(error) }, "cannot start: database");
    await sql.end({ timeout: 1 }).catch(() => {});
    log.flush();
    return 1;
  }
  if (applied.length) log.info({ applied }, "migrations applied");

  const observability = startObservability(spec.name, {
    version: spec.version,
    exportSpans: config.tracing.exportSpans,
    log,
  });
  const running = await spec.start({ config, sql, log, ...observability });
  const { host, port } = config.http;
  const server = running.app.listen({ hostname: host, port });
  log.info({ host, port: server.server?.port ?? port }, `${spec.name} listening`);

  const stopWorkers = new AbortController();
  const loops = running.workers.map((w) =>
    w.run(stopWorkers.signal).catch((error) => log.error({ err: error, worker: w.name }, "worker stopped")),
  );

  onShutdownSignal(log, async () => {
    running.beforeStop?.();
    await server.stop();
    stopWorkers.abort();
    await Promise.all(loops);
    await running.close();
    await sql.end({ timeout: 5 });
    log.info("stopped");
    log.flush();
  });
  return new Promise<number>(() => {});
}
