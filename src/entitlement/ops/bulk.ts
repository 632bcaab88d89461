// `entitlement bulk apply FILE.csv [--dry-run] [--result OUT.csv]` (docs/operations.md): the console's bulk change
// from the shell. It previews the file (counts, then each invalid row with its line), and unless --dry-run applies it
// through the command path as the caller `cli:bulk`, printing progress, and writes the per-row result as CSV (by
// default beside the file). Exit 0 when every valid row is done, 1 when a row failed (run it again), 2 for usage,
// 3 for a file that cannot be read (missing, a folder, not readable) or read as a bulk file, said in one line.
import { readFileSync, writeFileSync } from "node:fs";
import pkg from "../../../package.json" with { type: "json" };
import { type Subcommand, withConfig } from "../../shared/cli.ts";
import { checkedRun, operation, positionals, splitFlags } from "../../shared/cli-args.ts";
import { createSql, type Sql } from "../../shared/db.ts";
import { silentLogger } from "../../shared/logger.ts";
import { createRegistry } from "../../shared/metrics.ts";
import { loadOperatorConfig, printable } from "../../shared/ops.ts";
import { systemClock } from "../../shared/runtime.ts";
import { newTraceId } from "../../shared/trace-context.ts";
import { installTracing } from "../../shared/tracing.ts";
import { type EntitlementConfig, loadEntitlementConfig } from "../config.ts";
import { applyBulk, type BulkDeps, type BulkRun } from "../features/bulk/apply.ts";
import { type BulkFile, BulkFileError, readBulkFile } from "../features/bulk/csv.ts";
import { type BulkPlan, planBulk, planCounts } from "../features/bulk/plan.ts";
import { countOutcomes, type ResultCounts, resultCsv } from "../features/bulk/result-csv.ts";
import { createCommandMetrics } from "../features/commands/metrics.ts";
import { SCHEMA } from "../migrations.ts";
import { createWakeups } from "../work/wakeups.ts";

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

const countsLine = (n: Readonly<ResultCounts>) =>
  `changed ${n.changed}, already applied ${n.already_applied}, unchanged ${n.unchanged}, invalid ${n.invalid}, ` +
  `failed ${n.failed}`;

/** Progress on stderr, at most once a second and at the end: rows done, and what they came to. */
function progressPrinter(): BulkRun["onProgress"] {
  let last = 0;
  return (done, total, counts) => {
    const at = performance.now();
    if (done < total && at - last < 1_000) return;
    last = at;
    console.error(`${done}/${total} rows done: ${countsLine(counts)}`);
  };
}

/** What a file that cannot be read is, in words (the error's code otherwise). */
const READ_ERRORS: Record<string, string> = {
  ENOENT: "no such file",
  EISDIR: "it is a directory",
  EACCES: "permission denied",
  ENOTDIR: "a part of the path is not a folder",
};

/** The file read as a bulk file, before anything is opened; else one line on stderr saying why not, and undefined. */
function loadBulkFile(path: string): BulkFile | undefined {
  try {
    return readBulkFile(readFileSync(path));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!(error instanceof BulkFileError) && typeof code !== "string") throw error;
    const line =
      error instanceof BulkFileError
        ? `${path}: ${error.message}`
        : `cannot read ${path}: ${READ_ERRORS[code as string] ?? code}`;
    console.error(printable(`entitlement bulk: ${line}`));
    return undefined;
  }
}

async function runBulk(deps: BulkDeps, file: BulkFile, args: BulkArgs, out: (line: string) => void): Promise<number> {
  const plan = await planBulk(deps.sql, file, deps.now());
  printPreview(plan, out);
  if (args.dryRun) return 0;
  const run = { caller: BULK_CALLER, traceId: newTraceId(), concurrency: CONCURRENCY };
  const results = await applyBulk(deps, plan, { ...run, onProgress: progressPrinter() });
  writeFileSync(args.result, resultCsv(results));
  const n = countOutcomes(results);
  out(`${countsLine(n)}; result: ${args.result}; trace ${run.traceId}`);
  return n.failed > 0 ? 1 : 0;
}

function bulkDeps(sql: Sql, config: EntitlementConfig): BulkDeps {
  return {
    sql,
    log: silentLogger,
    now: systemClock,
    idempotencyTtlMs: config.idempotency.ttlHours * 3_600_000,
    statementTimeoutMs: 5_000,
    metrics: createCommandMetrics(createRegistry("entitlement")),
    // The service's relays and schedulers hear of the new events and expiries as from another replica.
    onCommitted: createWakeups({ sql, log: silentLogger, retryMs: 1_000 }).committed,
  };
}

export function bulkSubcommand(env: Record<string, string | undefined> = process.env): Subcommand {
  return {
    name: "bulk",
    summary: "bulk apply FILE.csv [--dry-run]   (grants and revokes from a CSV file, see docs/operations.md)",
    run: checkedRun({ program: "entitlement", name: "bulk", usage: BULK_USAGE, parse: parseBulkArgs }, async (args) => {
      const file = loadBulkFile(args.file);
      if (!file) return EXIT_BAD_FILE;
      const load = () => loadOperatorConfig(env, () => loadEntitlementConfig(env, { requireAuth: false }));
      return withConfig("entitlement", load, async (config) => {
        // The run's trace reaches its outbox rows (and so the events' traceparent) through the active span.
        const tracing = installTracing({
          service: "entitlement",
          version: pkg.version,
          exportSpans: config.tracing.exportSpans,
        });
        const sql = createSql({
          url: config.database.url,
          schema: SCHEMA,
          max: CONCURRENCY,
          applicationName: "entitlement-bulk",
        });
        try {
          return await runBulk(bulkDeps(sql, config), file, args, (line) => console.log(line));
        } catch (error) {
          console.error(printable(`entitlement bulk: ${error instanceof Error ? error.message : String(error)}`));
          return 1;
        } finally {
          await sql.end({ timeout: 5 });
          await tracing.shutdown();
        }
      });
    }),
  };
}
