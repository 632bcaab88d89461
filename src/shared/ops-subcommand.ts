// An operator subcommand of either service, written once: its arguments checked before anything is opened, then its
// work with the service's configuration and one PostgreSQL connection of its own.
import type { Subcommand } from "./cli.ts";
import { checkedRun } from "./cli-args.ts";
import { type OpsDeps, withOpsDatabase } from "./ops.ts";

export type OpsEnv = Record<string, string | undefined>;

/** What a service's operator subcommands share: its program, its schema and how its configuration is read. */
export type OpsService<C> = {
  program: string;
  schema: string;
  loadConfig: (env: OpsEnv) => C;
  databaseUrl: (config: C) => string;
};

export type OpsSubcommandSpec<C, A> = {
  name: string;
  summary: string;
  usage: string;
  parse: (args: string[]) => A;
  run: (ctx: OpsDeps & { config: C }, parsed: A) => Promise<number>;
};

/**
 * An operator subcommand: its arguments are checked first (`--help`: exit 0; a UsageError from `parse`: exit 2), then
 * it runs with the configuration and a PostgreSQL connection (withOpsDatabase).
 */
export function serviceSubcommand<C, A>(
  service: OpsService<C>,
  env: OpsEnv,
  spec: OpsSubcommandSpec<C, A>,
): Subcommand {
  const check = { program: service.program, name: spec.name, usage: spec.usage, parse: spec.parse };
  return {
    name: spec.name,
    summary: spec.summary,
    run: checkedRun(check, (parsed, args) => {
      const label = `${spec.name} ${args.join(" ")}`;
      const ops = { ...service, env, label, loadConfig: () => service.loadConfig(env) };
      return withOpsDatabase(ops, (ctx) => spec.run(ctx, parsed));
    }),
  };
}
