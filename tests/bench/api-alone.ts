// The first figures of the bench: the Entitlement API alone (NATS off, so no relay; rate limit off; no scheduler) on a
// database of its own, against the database's pace for a grant, all in one stretch of the run on one cluster:
// - grants/s of the API ÷ pgbench of the least a grant must write, on plain tables (pace-schema.sql,
//   pace-grant.pgbench.sql, in pgbench's simple mode as the yardstick is defined): how near the API comes to what the
//   database can do;
// - beside it, ÷ pgbench of the service's own call (grant-call.pgbench.sql): what the HTTP layer and the client cost;
// - a bundle of 10 items, in items/s, against single grants/s (one transaction amortised over ten items);
// - point reservations created/s against grants/s (the same command path).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { type CpuReport, coresOf, measureCpu } from "./cpu.ts";
import { bundleOf, RESERVATION, runCommandLoad, runGrantLoad, type ThroughputResult } from "./grants.ts";
import { runPgbench } from "./pgbench.ts";
import type { Figure } from "./report.ts";
import * as stack from "./stack.ts";

const PACE_SCHEMA = join(import.meta.dir, "pace-schema.sql");
const PACE_SCRIPT = join(import.meta.dir, "pace-grant.pgbench.sql");
const CALL_SCRIPT = join(import.meta.dir, "grant-call.pgbench.sql");
const CLIENTS = 16;
const BUNDLE_ITEMS = 10;

type Pgbench = ThroughputResult & { unmeasured?: string };

export type ApiAloneResult = {
  grants: ThroughputResult;
  pace: Pgbench;
  call: Pgbench;
  bundles: ThroughputResult;
  reservations: ThroughputResult;
  /** Where the CPU went while the API's grants ran, and while the pace's pgbench ran. */
  cpu: { grants: CpuReport; pace: CpuReport };
};

/** A database holding only the plain tables of the least a grant writes (pace-schema.sql); its URL. */
export async function createPaceDatabase(adminUrl: string, name: string): Promise<string> {
  const url = await stack.createDatabase(adminUrl, name);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(readFileSync(PACE_SCHEMA, "utf8"));
  } finally {
    await sql.end();
  }
  return url;
}

/**
 * The database's pace for a grant: pgbench of pace-grant.pgbench.sql in simple mode, as the yardstick is defined; as
 * fast as it goes, or paced at `rate` transactions a second.
 */
export function runPace(url: string, clients: number, seconds: number, rate?: number) {
  return runPgbench({ databaseUrl: url, clients, seconds, script: PACE_SCRIPT, mode: "simple", rate });
}

/** Entitlement serving the API alone: NATS off (no relay), no rate limit, no scheduler. */
export function apiAloneEnv(env: Record<string, string>): Record<string, string> {
  return {
    ...env,
    NATS_ENABLED: "false",
    ENTITLEMENT_RATE_LIMIT_ENABLED: "false",
    ENTITLEMENT_SCHEDULER_ENABLED: "false",
  };
}

export async function measureApiAlone(args: {
  adminUrl: string;
  binary: string;
  names: stack.Names;
  auth: stack.ApiAuth;
  logFile: string;
  seconds: number;
  tag: string;
  progress: (line: string) => void;
}): Promise<{ result: ApiAloneResult; figures: Figure[] }> {
  const { progress, seconds } = args;
  const aloneUrl = await stack.createDatabase(args.adminUrl, `${args.names.database}_alone`);
  const paceUrl = await createPaceDatabase(args.adminUrl, `${args.names.database}_pace`);
  const common = { DATABASE_URL: aloneUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
  const migrate = Bun.spawnSync([args.binary, "migrate"], { env: { ...process.env, ...common } });
  if (migrate.exitCode !== 0) throw new Error(`entitlement migrate failed: ${migrate.stderr.toString()}`);
  const env = apiAloneEnv(stack.entitlementEnv(args.names, common, args.auth));
  const service = await stack.startService("entitlement (API alone)", args.binary, env, args.logFile);
  const load = {
    url: service.url,
    headers: args.auth.headers,
    connections: CLIENTS,
    seconds,
    tag: `${args.tag}-alone`,
  };
  try {
    progress("API alone: warm-up");
    await runGrantLoad({ ...load, seconds: 1 });
    progress(`API alone: grants, ${CLIENTS} connections, ${seconds}s (NATS off, rate limit off)`);
    let cpu = measureCpu({ entitlement: service.pid });
    const grants = await runGrantLoad(load);
    const grantsCpu = cpu();
    progress(`database's pace: pgbench of the least a grant writes, ${CLIENTS} clients, ${seconds}s`);
    cpu = measureCpu({});
    const paceRun = await runPace(paceUrl, CLIENTS, seconds);
    const paceCpu = cpu();
    progress(`pgbench of the service's own call, ${CLIENTS} clients, ${seconds}s`);
    const callUrl = new URL(aloneUrl);
    callUrl.searchParams.set("options", "-csearch_path=entitlement");
    const call = await runPgbench({ databaseUrl: callUrl.toString(), clients: CLIENTS, seconds, script: CALL_SCRIPT });
    progress(`API alone: bundles of ${BUNDLE_ITEMS}, ${CLIENTS} connections, ${seconds}s`);
    const bundles = await runCommandLoad({ ...load, command: bundleOf(BUNDLE_ITEMS) });
    progress(`API alone: point reservations, ${CLIENTS} connections, ${seconds}s`);
    const reservations = await runCommandLoad({ ...load, command: RESERVATION });
    const result = { grants, pace: paceRun, call, bundles, reservations, cpu: { grants: grantsCpu, pace: paceCpu } };
    return { result, figures: figuresOf(result) };
  } finally {
    await service.stop();
  }
}

/** A pgbench run that measured nothing gives NaN with pgbench's own words (pgbench.ts), for it and its ratio. */
const measured = (p: Pgbench) => (p.unmeasured ? { value: Number.NaN, unmeasured: p.unmeasured } : { value: p.rps });

function figuresOf(r: ApiAloneResult): Figure[] {
  const c = `c=${CLIENTS}`;
  const items = r.bundles.rps * BUNDLE_ITEMS;
  const ratio = (p: Pgbench) => {
    const m = measured(p);
    return { ...m, value: r.grants.rps / m.value };
  };
  return [
    {
      name: `API alone (NATS off, rate limit off) ÷ database's pace ${c}`,
      ...ratio(r.pace),
      unit: "",
      target: { op: ">=", value: 0.8 },
    },
    { name: `API alone ÷ pgbench of the service's call ${c}`, ...ratio(r.call), unit: "" },
    {
      name: `grants/s API alone ${c} (p50 ${r.grants.p50Ms} ms, p99 ${r.grants.p99Ms} ms, non-2xx ${r.grants.non2xx})`,
      value: r.grants.rps,
      unit: "req/s",
    },
    {
      name: `machine CPU busy, API alone ${c} (cores: entitlement ${coresOf(r.cpu.grants, "entitlement")}, autocannon ${coresOf(r.cpu.grants, "harness")})`,
      value: r.cpu.grants.machineBusy * 100,
      unit: "%",
    },
    { name: `grants/s database's pace ${c} (pgbench, plain tables)`, ...measured(r.pace), unit: "tx/s" },
    { name: `machine CPU busy, database's pace ${c}`, value: r.cpu.pace.machineBusy * 100, unit: "%" },
    { name: `grants/s pgbench of the service's call ${c}`, ...measured(r.call), unit: "tx/s" },
    {
      name: `bundle of ${BUNDLE_ITEMS}: items/s API alone ${c} (${r.bundles.rps.toFixed(0)} bundles/s, non-2xx ${r.bundles.non2xx})`,
      value: items,
      unit: "items/s",
    },
    {
      name: `bundle of ${BUNDLE_ITEMS}: items/s ÷ grants/s`,
      value: items / r.grants.rps,
      unit: "",
      target: { op: ">=", value: 3 },
    },
    {
      name: `reservations created/s API alone ${c} (non-2xx ${r.reservations.non2xx})`,
      value: r.reservations.rps,
      unit: "req/s",
    },
    {
      name: "reservations created/s ÷ grants/s",
      value: r.reservations.rps / r.grants.rps,
      unit: "",
      target: { op: ">=", value: 0.8 },
    },
  ];
}
