// What every notification operator subcommand opens: the configuration from the environment, one PostgreSQL connection
// and, for the NATS DLQ replay only, a NATS connection that fails fast instead of waiting for the server.
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { natsServers } from "../../shared/nats-security.ts";
import { type OpsDeps, withOpsDatabase } from "../../shared/ops.ts";
import { loadNotificationConfig, type NotificationConfig } from "../config.ts";
import { SCHEMA } from "../migrations.ts";

export type Jet = { js: JetStreamClient; jsm: JetStreamManager };
export type OpsEnv = Record<string, string | undefined>;

/** Runs `body` with the configuration and a PostgreSQL connection (see withOpsDatabase). */
export function withOps(
  env: OpsEnv,
  label: string,
  body: (ctx: OpsDeps & { config: NotificationConfig }) => Promise<number>,
): Promise<number> {
  const spec = {
    program: "notification",
    label,
    schema: SCHEMA,
    loadConfig: () => loadNotificationConfig(env),
    databaseUrl: (c: NotificationConfig) => c.database.url,
  };
  return withOpsDatabase(spec, body);
}

/** Connects to NATS once (no retry loop: an operator wants an error, not a hang), runs `body`, drains. */
export async function withJetStream<T>(config: NotificationConfig, body: (jet: Jet) => Promise<T>): Promise<T> {
  const nc = await connect({
    ...config.nats.security,
    inboxPrefix: config.nats.opsInboxPrefix,
    servers: natsServers(config.nats.url),
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
