// `entitlement partitions list | detach <partition> | drop <partition>`: the month partitions of the history tables
// (audit, point ledger, point audit) with their rows and sizes, and the two steps of archiving one month by hand:
// detach it (the service no longer sees it, the table stays), dump it with pg_dump, then drop it (docs/operations.md).
import type { Subcommand } from "../../shared/cli.ts";
import { operation, positionals, quoted, UsageError } from "../../shared/cli-args.ts";
import type { OpsDeps } from "../../shared/ops.ts";
import {
  detachHistoryPartition,
  dropDetachedHistoryPartition,
  HISTORY_TABLES,
  listHistoryPartitions,
  type PartitionRow,
} from "../work/partitions/queries.ts";
import { type OpsEnv, opsSubcommand } from "./context.ts";

export const PARTITIONS_USAGE = "usage: entitlement partitions list | detach <partition> | drop <partition>";
/** Names the database functions accept; anything else is a usage error before any connection is opened. */
const PARTITION_NAME = new RegExp(`^(${HISTORY_TABLES.join("|")})_(before_)?\\d{4}_\\d{2}$`);
/** SQLSTATE invalid_parameter_value: the functions' refusal of a name that is not (or no longer) such a partition. */
const REFUSED = "22023";

const range = (p: PartitionRow): string =>
  p.is_default
    ? "default (rows outside every month)"
    : `[${p.from_at?.toISOString() ?? "-infinity"}, ${p.to_at?.toISOString() ?? "infinity"})`;
const rows = (p: PartitionRow): string =>
  p.estimated_rows < 0 ? "rows unknown (not analyzed)" : `~${p.estimated_rows} rows`;
const mib = (bytes: number): string => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;

export async function printPartitions({ sql, out }: OpsDeps): Promise<number> {
  const partitions = await listHistoryPartitions(sql);
  for (const p of partitions) out(`${p.parent} ${p.partition} ${range(p)} ${rows(p)} ${mib(p.bytes)}`);
  out(`${partitions.length} partition(s); row counts are the planner's estimates as of the last ANALYZE`);
  return 0;
}

export async function detachPartition({ sql, out }: OpsDeps, partition: string): Promise<number> {
  const parent = await refusedAsNull(detachHistoryPartition(sql, partition));
  if (parent === null) {
    out(`${partition} is not a month partition of a history table: nothing detached`);
    return 1;
  }
  out(`detached ${partition} from ${parent}; the table ${partition} stays until dropped`);
  out(`archive it: pg_dump --format=custom --table='entitlement.${partition}' --file=${partition}.dump <database>`);
  out(`then: entitlement partitions drop ${partition}`);
  return 0;
}

export async function dropPartition({ sql, out }: OpsDeps, partition: string): Promise<number> {
  if ((await refusedAsNull(dropDetachedHistoryPartition(sql, partition).then(() => true))) === null) {
    out(`${partition} is not a detached history partition: nothing dropped (detach it first)`);
    return 1;
  }
  out(`dropped ${partition}`);
  return 0;
}

/** The database function's refusal as null; any other error goes up. */
async function refusedAsNull<T>(work: Promise<T>): Promise<T | null> {
  return work.catch((error: unknown) => {
    if ((error as { code?: string }).code === REFUSED) return null;
    throw error;
  });
}

type PartitionsArgs = { op: "list" } | { op: "detach" | "drop"; partition: string };

function parsePartitionsArgs(args: string[]): PartitionsArgs {
  const [first, ...rest] = args;
  const op = operation(first, ["list", "detach", "drop"] as const);
  if (op === "list") {
    positionals(rest, []);
    return { op };
  }
  const [partition] = positionals(rest, ["<partition>"]) as [string];
  if (!PARTITION_NAME.test(partition)) {
    throw new UsageError(
      `<partition> ${quoted(partition)} is not a month partition's name (<table>_YYYY_MM or <table>_before_YYYY_MM, ` +
        `<table> one of ${HISTORY_TABLES.join(", ")}; \`entitlement partitions list\` shows them)`,
    );
  }
  return { op, partition };
}

export function partitionsSubcommand(env: OpsEnv = process.env): Subcommand {
  return opsSubcommand(env, {
    name: "partitions",
    summary: "partitions list | detach <partition> | drop <partition>   (archiving history, see docs/operations.md)",
    usage: PARTITIONS_USAGE,
    parse: parsePartitionsArgs,
    run: (deps, parsed) => {
      if (parsed.op === "list") return printPartitions(deps);
      return parsed.op === "detach" ? detachPartition(deps, parsed.partition) : dropPartition(deps, parsed.partition);
    },
  });
}
