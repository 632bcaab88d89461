// `entitlement bulk apply FILE.csv [--dry-run] [--result OUT.csv]` (docs/operations.md): the console's bulk change
// from the shell. It previews the file (counts, then each invalid row with its line), and unless --dry-run applies it
// through the command path as the caller `cli:bulk`, printing progress, and writes the per-row result as CSV (by
// default beside the file). Exit 0 when every valid row is done, 1 when a row failed (run it again), 2 for usage,
// 3 for a file that cannot be read as a bulk file.
import { readFileSync, writeFileSync } from "node:fs";
import { type Subcommand, withConfig } from "../../shared/cli.ts";
import { checkedRun, operation, positionals, splitFlags } from "../../shared/cli-args.ts";
import { createSql } from "../../shared/db.ts";
import { silentLogger } from "../../shared/logger.ts";
import { createRegistry } from "../../shared/metrics.ts";
import { loadOperatorConfig, printable } from "../../shared/ops.ts";
import { systemClock } from "../../shared/runtime.ts";
import { loadEntitlementConfig } from "../config.ts";
import { applyBulk, type BulkDeps } from "../features/bulk/apply.ts";
import { BulkFileError, readBulkFile } from "../features/bulk/csv.ts";
import { type BulkPlan, planBulk, planCounts } from "../features/bulk/plan.ts";
import { countOutcomes, resultCsv } from "../features/bulk/result-csv.ts";
import { SCHEMA } from "../migrations.ts";
import { createWakeups } from "../work/wakeups.ts";
import { createCommandMetrics } from "../write/metrics.ts";

export const BULK_USAGE = "usage: entitlement bulk apply FILE.csv [--dry-run] [--result OUT.csv]";
export const BULK_CALLER = "cli:bulk";
const EXIT_BAD_FILE = 3;
/** Commands in flight at once: enough to keep a few database cores busy, few enough to leave the API its pool. */
const CONCURRENCY = 8;

type BulkArgs = { file: string; dryRun: boolean; result: string };

/** `apply FILE.csv [--dry-run] [--result OUT.csv]`; anything else throws a UsageError saying what was wrong. */
export function parseBulkArgs(args: string[]): BulkArgs {
  const [first, ...rest] = args;
  operation(first, ["apply"] as const);
  const { positional, flags } = splitFlags(rest, { "--dry-run": "switch", "--result": "value" });
  const [file] = positionals(positional, ["FILE.csv"]) as [string];
  return { file, dryRun: flags["--dry-run"] === true, result: flags["--result"] ?? `${file}.result.csv` };
}

function printPreview(plan: BulkPlan, out: (line: string) => void): void {
  const c = planCounts(plan);
  out(`${c.rows} rows: ${c.willChange} will change, ${c.unchanged} already in that state, ${c.invalid} invalid`);
  for (const row of plan.invalid) out(printable(`line ${row.line}: ${row.error}`));
}

/** Progress on stderr, at most once a second and at the end. */
function progressPrinter(): (done: number, total: number) => void {
  let last = 0;
  return (done, total) => {
    const at = performance.now();
    if (done < total && at - last < 1_000) return;
    last = at;
    console.error(`applied ${done}/${total} rows`);
  };
}

async function runBulk(deps: BulkDeps, args: BulkArgs, out: (line: string) => void): Promise<number> {
  let plan: BulkPlan;
  try {
    plan = await planBulk(deps.sql, readBulkFile(readFileSync(args.file)), deps.now());
  } catch (error) {
    if (!(error instanceof BulkFileError)) throw error;
    console.error(printable(`entitlement bulk: ${args.file}: ${error.message}`));
    return EXIT_BAD_FILE;
  }
  printPreview(plan, out);
  if (args.dryRun) return 0;
  const run = { caller: BULK_CALLER, traceId: crypto.randomUUID(), concurrency: CONCURRENCY };
  const results = await applyBulk(deps, plan, { ...run, onProgress: progressPrinter() });
  writeFileSync(args.result, resultCsv(results));
  const n = countOutcomes(results);
  out(
    `changed ${n.changed}, already applied ${n.already_applied}, unchanged ${n.unchanged}, invalid ${n.invalid}, ` +
      `failed ${n.failed}; result: ${args.result}`,
  );
  return n.failed > 0 ? 1 : 0;
}

export function bulkSubcommand(env: Record<string, string | undefined> = process.env): Subcommand {
  return {
    name: "bulk",
    summary: "bulk apply FILE.csv [--dry-run]   (grants and revokes from a CSV file, see docs/operations.md)",
    run: checkedRun({ program: "entitlement", name: "bulk", usage: BULK_USAGE, parse: parseBulkArgs }, async (args) => {
      const load = () => loadOperatorConfig(env, () => loadEntitlementConfig(env, { requireAuth: false }));
      return withConfig("entitlement", load, async (config) => {
        const sql = createSql({
          url: config.database.url,
          schema: SCHEMA,
          max: CONCURRENCY,
          applicationName: "entitlement-bulk",
        });
        const deps: BulkDeps = {
          sql,
          log: silentLogger,
          now: systemClock,
          idempotencyTtlMs: config.idempotency.ttlHours * 3_600_000,
          statementTimeoutMs: 5_000,
          metrics: createCommandMetrics(createRegistry("entitlement")),
          // The service's relays and schedulers hear of the new events and expiries as from another replica.
          onCommitted: createWakeups({ sql, log: silentLogger, retryMs: 1_000 }).committed,
        };
        try {
          return await runBulk(deps, args, (line) => console.log(line));
        } catch (error) {
          console.error(printable(`entitlement bulk: ${error instanceof Error ? error.message : String(error)}`));
          return 1;
        } finally {
          await sql.end({ timeout: 5 });
        }
      });
    }),
  };
}
