// What every entitlement operator subcommand opens: the configuration from the environment (no API tokens needed: an
// operator subcommand serves nothing) and one PostgreSQL connection; and the shapes the subcommands share.
import type { Subcommand } from "../../shared/cli.ts";
import { checkedRun, operation, positionals, splitFlags, uuidArgument } from "../../shared/cli-args.ts";
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
    env,
    program: "entitlement",
    label,
    schema: SCHEMA,
    loadConfig: () => loadEntitlementConfig(env, { requireAuth: false }),
    databaseUrl: (c: EntitlementConfig) => c.database.url,
  };
  return withOpsDatabase(spec, body);
}

/**
 * An operator subcommand: its arguments are checked first (`--help`: exit 0; a usage error, which `parse` throws as a
 * UsageError: exit 2), then it runs inside withOps.
 */
export function opsSubcommand<A>(
  env: OpsEnv,
  spec: {
    name: string;
    summary: string;
    usage: string;
    parse: (args: string[]) => A;
    run: (ctx: OpsDeps & { config: EntitlementConfig }, parsed: A) => Promise<number>;
  },
): Subcommand {
  const check = { program: "entitlement", name: spec.name, usage: spec.usage, parse: spec.parse };
  return {
    name: spec.name,
    summary: spec.summary,
    run: checkedRun(check, (parsed, args) =>
      withOps(env, `${spec.name} ${args.join(" ")}`, (ctx) => spec.run(ctx, parsed)),
    ),
  };
}

/** The usage of a `stats | requeue <id> | requeue --failed` subcommand. */
export const statsOrRequeueUsage = (name: string, idName: string) =>
  `usage: entitlement ${name} stats | requeue ${idName} | requeue --failed`;

/**
 * A subcommand of a table's FAILED rows (`outbox`, `points`): `stats` prints its counts, `requeue <id>` one FAILED row
 * and `requeue --failed` every one; `idName` names the id in its usage (`<event_id>`).
 */
export function statsOrRequeueSubcommand(
  env: OpsEnv,
  spec: {
    name: string;
    idName: string;
    stats: (deps: OpsDeps) => Promise<number>;
    requeue: (deps: OpsDeps, id: string | undefined) => Promise<number>;
  },
): Subcommand {
  const commands = `${spec.name} stats | requeue ${spec.idName} | requeue --failed`;
  return opsSubcommand(env, {
    name: spec.name,
    summary: `${commands}   (operator tools, see docs/operations.md)`,
    usage: statsOrRequeueUsage(spec.name, spec.idName),
    parse: (args) => parseStatsOrRequeue(args, spec.idName),
    run: (deps, parsed) => (parsed.op === "stats" ? spec.stats(deps) : spec.requeue(deps, parsed.id)),
  });
}

/**
 * `stats`, `requeue <id>` (a UUID, lower-cased) or `requeue --failed` (every FAILED row: no id); `idName` names the id
 * in a usage error (`<event_id>`).
 */
export function parseStatsOrRequeue(args: string[], idName: string): { op: "stats" } | { op: "requeue"; id?: string } {
  const [first, ...rest] = args;
  const op = operation(first, ["stats", "requeue"] as const);
  if (op === "stats") {
    positionals(rest, []);
    return { op };
  }
  const { positional, flags } = splitFlags(rest, { "--failed": "switch" });
  if (flags["--failed"]) {
    positionals(positional, []);
    return { op };
  }
  const [id] = positionals(positional, [`${idName} (or --failed)`]);
  return { op, id: uuidArgument(idName, id as string) };
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
