// What every notification operator subcommand opens: the configuration from the environment, one PostgreSQL connection
// and, for the NATS DLQ replay only, a NATS connection that fails fast instead of waiting for the server.
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { Subcommand } from "../../shared/cli.ts";
import { checkedRun, positionals, splitFlags, wholeNumber } from "../../shared/cli-args.ts";
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
    env,
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

/** `--limit N` (1 to 999999, default 100) and nothing else. */
export function parseLimit(args: string[]): number {
  const { positional, flags } = splitFlags(args, { "--limit": "value" });
  positionals(positional, []);
  const limit = flags["--limit"];
  return limit === undefined ? 100 : wholeNumber("--limit", limit, 1, 999_999);
}

/**
 * A notification operator subcommand: its arguments are checked first (`--help`: exit 0; a UsageError from `parse`:
 * exit 2), then it runs inside withOps.
 */
export function opsSubcommand<A>(
  env: OpsEnv,
  spec: {
    name: string;
    summary: string;
    usage: string;
    parse: (args: string[]) => A;
    run: (ctx: OpsDeps & { config: NotificationConfig }, parsed: A) => Promise<number>;
  },
): Subcommand {
  const check = { program: "notification", name: spec.name, usage: spec.usage, parse: spec.parse };
  return {
    name: spec.name,
    summary: spec.summary,
    run: checkedRun(check, (parsed, args) =>
      withOps(env, `${spec.name} ${args.join(" ")}`, (ctx) => spec.run(ctx, parsed)),
    ),
  };
}
