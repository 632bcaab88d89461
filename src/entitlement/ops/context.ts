// What every entitlement operator subcommand opens: the configuration from the environment (no API tokens needed: an
// operator subcommand serves nothing) and one PostgreSQL connection; and the shapes the subcommands share.
import type { Subcommand } from "../../shared/cli.ts";
import { operation, positionals, splitFlags, uuidArgument } from "../../shared/cli-args.ts";
import type { OpsDeps } from "../../shared/ops.ts";
import {
  type OpsEnv,
  type OpsService,
  type OpsSubcommandSpec,
  serviceSubcommand,
} from "../../shared/ops-subcommand.ts";
import { type EntitlementConfig, loadEntitlementConfig } from "../config.ts";
import { SCHEMA } from "../migrations.ts";

export type { OpsEnv };

const ENTITLEMENT_OPS: OpsService<EntitlementConfig> = {
  program: "entitlement",
  schema: SCHEMA,
  loadConfig: (env) => loadEntitlementConfig(env, { requireAuth: false }),
  databaseUrl: (c) => c.database.url,
};

/** An entitlement operator subcommand (serviceSubcommand): arguments checked, then run with a connection. */
export function opsSubcommand<A>(env: OpsEnv, spec: OpsSubcommandSpec<EntitlementConfig, A>): Subcommand {
  return serviceSubcommand(ENTITLEMENT_OPS, env, spec);
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
