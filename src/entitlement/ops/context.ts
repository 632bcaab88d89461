// What every entitlement operator subcommand opens: the configuration from the environment (no API tokens needed: an
// operator subcommand serves nothing) and one PostgreSQL connection; and the shapes the subcommands share.
import { EXIT_USAGE, type Subcommand } from "../../shared/cli.ts";
import { isUuid } from "../../shared/ids.ts";
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

/** An operator subcommand: its arguments are checked first (a usage error: exit 2), then it runs inside withOps. */
export function opsSubcommand<A>(
  env: OpsEnv,
  spec: {
    name: string;
    summary: string;
    usage: string;
    parse: (args: string[]) => A | undefined;
    run: (ctx: OpsDeps & { config: EntitlementConfig }, parsed: A) => Promise<number>;
  },
): Subcommand {
  return {
    name: spec.name,
    summary: spec.summary,
    run: async (args) => {
      const parsed = spec.parse(args);
      if (parsed === undefined) {
        console.error(spec.usage);
        return EXIT_USAGE;
      }
      return withOps(env, `${spec.name} ${args.join(" ")}`, (ctx) => spec.run(ctx, parsed));
    },
  };
}

/** `stats`, `requeue <id>` (a UUID, lower-cased) or `requeue --failed` (every FAILED row: no id). */
export function parseStatsOrRequeue(args: string[]): { op: "stats" } | { op: "requeue"; id?: string } | undefined {
  const [op, arg, ...extra] = args;
  if (extra.length > 0) return undefined;
  if (op === "stats" && arg === undefined) return { op };
  if (op === "requeue" && arg === "--failed") return { op };
  if (op === "requeue" && arg !== undefined && isUuid(arg)) return { op, id: arg.toLowerCase() };
  return undefined;
}

/**
 * The last line of a requeue: how many FAILED rows were requeued, or, for one named row that was not, whether it
 * exists (exit 1 when it does not) and in which status.
 */
export async function requeueOutcome(
  out: (line: string) => void,
  r: { id?: string; requeued: number; noun: string; missing: string; status: () => Promise<string | undefined> },
): Promise<number> {
  if (r.id === undefined) {
    out(r.requeued > 0 ? `requeued ${r.requeued} FAILED ${r.noun}(s)` : `no FAILED ${r.noun}s: nothing to do`);
    return 0;
  }
  if (r.requeued > 0) return 0;
  const status = await r.status();
  if (status === undefined) {
    out(`no ${r.missing} ${r.id}`);
    return 1;
  }
  out(`${r.noun} ${r.id} is ${status}, not FAILED: nothing to do`);
  return 0;
}
