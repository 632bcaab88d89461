// What every notification operator command opens: the configuration from the environment, one PostgreSQL connection
// and, for the NATS DLQ replay only, a NATS connection that fails fast instead of waiting for the server.
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { ConfigError, EXIT_CONFIG } from "../../shared/config.ts";
import { createSql, type Sql } from "../../shared/db.ts";
import { loadNotificationConfig, type NotificationConfig } from "../config.ts";
import { SCHEMA } from "../migrations.ts";

export type Out = (line: string) => void;
export type OpsDeps = { sql: Sql; out: Out };
export type Jet = { js: JetStreamClient; jsm: JetStreamManager };
export type OpsEnv = Record<string, string | undefined>;

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Runs `body` with the service's configuration and a PostgreSQL connection; returns its exit code, 1 when it throws
 * (the error printed on one line) and 78 when the configuration is invalid.
 */
export async function withOps(
  env: OpsEnv,
  label: string,
  body: (ctx: OpsDeps & { config: NotificationConfig }) => Promise<number>,
): Promise<number> {
  let config: NotificationConfig;
  try {
    config = loadNotificationConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const p of error.problems) console.error(`notification: configuration: ${p}`);
    return EXIT_CONFIG;
  }
  const sql = createSql({ url: config.database.url, schema: SCHEMA, max: 1, applicationName: "notification-ops" });
  try {
    return await body({ sql, config, out: (line) => console.log(line) });
  } catch (error) {
    console.error(`notification ${label}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Connects to NATS once (no retry loop: an operator wants an error, not a hang), runs `body`, drains. */
export async function withJetStream<T>(config: NotificationConfig, body: (jet: Jet) => Promise<T>): Promise<T> {
  const nc = await connect({
    servers: config.nats.url.split(",").map((s) => s.trim()),
    name: "notification-ops",
    timeout: config.nats.connectionTimeoutMs,
  });
  try {
    return await body({ js: jetstream(nc), jsm: await jetstreamManager(nc) });
  } finally {
    await nc.drain();
  }
}

/** `--limit N` (default 100) and nothing else. */
export function parseLimit(args: string[]): number | undefined {
  if (args.length === 0) return 100;
  if (args.length === 2 && args[0] === "--limit" && /^[1-9]\d{0,5}$/.test(args[1] ?? "")) return Number(args[1]);
  return undefined;
}
