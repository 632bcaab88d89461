// What every notification operator subcommand opens: the configuration from the environment, one PostgreSQL connection
// and, for the NATS DLQ replay only, a NATS connection that fails fast instead of waiting for the server.
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { Subcommand } from "../../shared/cli.ts";
import { positionals, splitFlags, wholeNumber } from "../../shared/cli-args.ts";
import { natsServers } from "../../shared/nats-security.ts";
import {
  type OpsEnv,
  type OpsService,
  type OpsSubcommandSpec,
  serviceSubcommand,
} from "../../shared/ops-subcommand.ts";
import { loadNotificationConfig, type NotificationConfig } from "../config.ts";
import { SCHEMA } from "../migrations.ts";

export type Jet = { js: JetStreamClient; jsm: JetStreamManager };
export type { OpsEnv };

const NOTIFICATION_OPS: OpsService<NotificationConfig> = {
  program: "notification",
  schema: SCHEMA,
  loadConfig: (env) => loadNotificationConfig(env),
  databaseUrl: (c) => c.database.url,
};

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

/** `--limit N` (1 to 999999, default 100) and nothing else. */
export function parseLimit(args: string[]): number {
  const { positional, flags } = splitFlags(args, { "--limit": "value" });
  positionals(positional, []);
  const limit = flags["--limit"];
  return limit === undefined ? 100 : wholeNumber("--limit", limit, 1, 999_999);
}

/** A notification operator subcommand (serviceSubcommand): arguments checked, then run with a connection. */
export function opsSubcommand<A>(env: OpsEnv, spec: OpsSubcommandSpec<NotificationConfig, A>): Subcommand {
  return serviceSubcommand(NOTIFICATION_OPS, env, spec);
}
