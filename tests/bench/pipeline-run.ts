// `bun run bench:pipeline`: the pipeline-cost phase alone (pipeline.ts), on its own PostgreSQL cluster and nats-server.
//   bun run bench:pipeline [--quick] [--rate N] [--seconds S] [--backlog N] [--idle S] [--dist DIR] [--out FILE]
// --dist measures executables built elsewhere (DIR/entitlement, DIR/notification), e.g. of another commit, with
// `bun run build --outdir DIR` in a checkout of it; without it, this tree is built.
// Prints the table "core-ms per grant, commit → SENT" and the statements per event, and writes the figures as JSON.
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import { measurePipelineCost } from "./pipeline.ts";
import { pipelineRows, renderPipelineTable, statementBreakdown } from "./pipeline-report.ts";
import * as stack from "./stack.ts";
import { progressLines } from "./stats.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    quick: { type: "boolean", default: false },
    rate: { type: "string" },
    seconds: { type: "string" },
    backlog: { type: "string" },
    idle: { type: "string" },
    dist: { type: "string" },
    out: { type: "string" },
  },
});
const quick = values.quick ?? false;
const num = (text: string | undefined, fallback: number) => {
  const n = text === undefined ? fallback : Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`expected a positive number, got '${text}'`);
  return n;
};
const options = {
  rate: num(values.rate, quick ? 100 : 300),
  seconds: num(values.seconds, quick ? 2 : 20),
  backlog: Math.round(num(values.backlog, quick ? 1_000 : 20_000)),
  idleSeconds: num(values.idle, quick ? 1 : 10),
};

const { began, progress, detail } = progressLines();

async function main(): Promise<void> {
  const tag = Date.now().toString(36);
  const logDir = join(stack.root, ".data/bench", tag);
  mkdirSync(logDir, { recursive: true });
  const dist = values.dist;
  if (!dist) progress("building executables into .data/bench/dist");
  const bin = dist
    ? { entitlement: join(dist, "entitlement"), notification: join(dist, "notification") }
    : await stack.buildBinaries();
  const load = { before: loadavg() };
  const result = await measurePipelineCost({ bin, options, logDir, progress, detail });
  const loadAfter = loadavg();
  console.log(`\n${renderPipelineTable(result)}\n`);
  for (const run of ["steady", "backlog"] as const) {
    console.log(`statements per event, ${run}:`);
    for (const s of statementBreakdown(result[run]).filter((s) => s.perEvent >= 0.005))
      console.log(`  ${s.role.padEnd(18)} ${s.perEvent.toFixed(3).padStart(7)}  ${s.query.slice(0, 110)}`);
  }
  console.log(
    `load average before ${load.before.map((l) => l.toFixed(2)).join(" ")}, after ${loadAfter.map((l) => l.toFixed(2)).join(" ")}`,
  );
  const out = values.out ?? join(stack.root, ".data/bench", `pipeline-${tag}.json`);
  const report = {
    tag,
    date: new Date().toISOString(),
    command: `bun run bench:pipeline ${process.argv.slice(2).join(" ")}`.trim(),
    loadAverage: { before: load.before, after: loadAfter },
    binaries: bin,
    result: pipelineRows(result).json,
  };
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  progress(`done in ${((performance.now() - began) / 1000).toFixed(0)}s; JSON: ${relative(process.cwd(), out)}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
