// `bun run drill [--quick] [--only NAME,...] [--seed N] [--keep]`: fault drills. Builds both executables into a
// temporary folder and, for each topology in turn (stages.ts: one machine; a 3-node NATS cluster; a PostgreSQL primary
// with a synchronous standby), starts its own PostgreSQL and NATS processes there, runs two Entitlement replicas and
// one Notification on them, and injects one fault per scenario under a steady load; prints the table and exits 1 when
// any scenario lost or duplicated something or broke another guarantee. `--quick` (or DRILL_SCALE=ci) is the bounded
// CI version. Everything it started is stopped and its folder removed at exit, also on failure or Ctrl-C (`--keep`
// keeps the folder and its logs).
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildService, defaultTarget } from "../../tools/build.ts";
import { formatTable, passed, type ScenarioResult } from "./report.ts";
import { runScenario } from "./scenario-run.ts";
import { SCALES, type Scenario, SCENARIOS as SINGLE_MACHINE } from "./scenarios.ts";
import { HA_SCENARIOS } from "./scenarios-ha.ts";
import { type Stage, startStage, TOPOLOGIES, type Topology } from "./stages.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    seed: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const scale = SCALES[values.quick || process.env.DRILL_SCALE === "ci" ? "quick" : "full"];
const seed = Number(values.seed ?? Math.floor(Math.random() * 2 ** 31));
const wanted = values.only?.split(",").map((s) => s.trim());
const SCENARIOS = [...SINGLE_MACHINE, ...HA_SCENARIOS];
const scenarios = SCENARIOS.filter((s) => !wanted || wanted.some((w) => s.name.includes(w))).filter(
  (s) => !s.scales || s.scales.includes(scale.name),
);
const log = (line: string) => console.log(`[drill] ${line}`);

/** mulberry32: the seed printed at start reproduces the same fault moments and request mix. */
function seeded(s: number): () => number {
  let a = s >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const root = mkdtempSync(join(tmpdir(), "drill-"));
chmodSync(root, 0o755); // PostgreSQL runs as its own user and must reach its data folder inside.
let stage: Stage | undefined;

/** Synchronous, so it also runs from the exit handler after a crash. */
function cleanup(): void {
  stage?.kill();
  stage = undefined;
  if (values.keep) console.log(`[drill] kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    log(`${signal}: stopping what the drill started`);
    process.exit(130);
  });
}

async function main(): Promise<number> {
  if (scenarios.length === 0) {
    console.error(`no scenario matches --only ${values.only}; known: ${SCENARIOS.map((s) => s.name).join(", ")}`);
    return 2;
  }
  log(`scale ${scale.name}, seed ${seed}, folder ${root}`);
  const dist = join(root, "dist");
  await Promise.all([
    buildService("entitlement", { target: defaultTarget(), outdir: dist }),
    buildService("notification", { target: defaultTarget(), outdir: dist }),
  ]);
  const random = seeded(seed);
  const run = Date.now().toString(36);
  const results: ScenarioResult[] = [];
  const topologies = Object.keys(TOPOLOGIES) as Topology[];
  for (const topology of topologies) {
    const group = scenarios.filter((s: Scenario) => (s.topology ?? "single") === topology);
    if (group.length === 0) continue;
    log(`topology ${topology}`);
    stage = await startStage(topology, { root, dist, keep: values.keep, log });
    log("services ready");
    for (const scenario of group) {
      log(`scenario ${scenario.name}`);
      const { fleet, infra, sql, natsUrl } = stage;
      const prefix = `d${run}s${results.length}-`;
      results.push(await runScenario(scenario, { fleet, infra, sql, natsUrl, scale, random, log, prefix }));
    }
    await stage.stop();
    stage = undefined;
  }
  console.log(`\nfault drill (${scale.name}, seed ${seed})\n${formatTable(results)}`);
  const failed = results.filter((r) => !passed(r));
  if (failed.length > 0) {
    log(`FAILED: ${failed.map((r) => r.name).join(", ")} (logs: rerun with --keep and --seed ${seed})`);
    return 1;
  }
  log("every scenario passed");
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`[drill] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
