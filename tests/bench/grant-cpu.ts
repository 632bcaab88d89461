// CPU per grant, robust to a noisy machine: the Entitlement API alone (NATS off, so no relay) on a fresh database,
// N grants through autocannon, and the CPU seconds (utime + stime from /proc) that the service process and every
// process of the PostgreSQL cluster spent meanwhile, divided by N; then the same for N transactions of pgbench's grant
// (grant.pgbench.sql, 16 clients, prepared), the pgbench process in place of the service, and of the service's own
// one call run by pgbench (grant-call.pgbench.sql). Other load on the machine
// slows the runs down but adds little to these processes' own CPU time, so the figures hold where throughput does not:
// with the cores saturated, API ÷ pgbench in grants/s tends to the inverse of the ratio of CPU per grant.
//   DATABASE_URL=postgres://…/postgres bun run tests/bench/grant-cpu.ts [--grants 5000] [--connections 16]
//     [--binary path/to/entitlement] [--revoke] [--api-only] [--statements] [--waits]
// --api-only: the API's figures only (the pgbench runs need this checkout's schema; a previous release's build has its
// own). --statements: each statement's calls and execution time per grant during the load (pg_stat_statements, which
// the server must preload) and each function's own time (track_functions = all): where a grant's database time goes.
// --waits: what the service's backends were doing, sampled every 20 ms during the load (pg_stat_activity's wait
// events; CPU where none): contention shows as LWLock or Lock waits, the commit's flush as WALWrite and WALSync.
// The PostgreSQL server must run on this machine (its postmaster.pid is read); use one with stock settings.
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import postgres from "postgres";
import { requirePostgresTool } from "../../tools/infra/postgres.ts";
import { processCpuSeconds, TICKS_PER_SECOND } from "./cpu.ts";
import { GRANT, numberedRequests } from "./grants.ts";
import { PGBENCH_SCRIPT } from "./pgbench.ts";
import * as stack from "./stack.ts";
import { sampleWaits, type Waits, waitShares } from "./waits.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    grants: { type: "string", default: "5000" },
    connections: { type: "string", default: "16" },
    binary: { type: "string" },
    revoke: { type: "boolean", default: false },
    "api-only": { type: "boolean", default: false },
    statements: { type: "boolean", default: false },
    waits: { type: "boolean", default: false },
  },
});
const grants = Number(values.grants);
const connections = Number(values.connections);
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** CPU seconds of a process's children that have ended and been waited for (cutime + cstime). */
function reapedChildrenCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
}

/**
 * CPU seconds of the whole cluster so far: the postmaster, its live children (backends, writers, autovacuum workers)
 * and those that have ended (the postmaster waits for each). Differences of two readings are exact for children that
 * start or end in between.
 */
function clusterCpuSeconds(postmaster: number): number {
  let seconds = processCpuSeconds(postmaster) + reapedChildrenCpuSeconds(postmaster);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.split(" ")[1]);
      if (ppid === postmaster) seconds += processCpuSeconds(Number(entry));
    } catch {
      // gone meanwhile: its time is in the postmaster's reaped children now
    }
  }
  return seconds;
}

async function load(url: string, headers: Record<string, string>, amount: number, run: string) {
  // A revoke takes the body of a grant: each request names a new user's item.
  const command = { path: `/v1/entitlements/${values.revoke ? "revokes" : "grants"}`, body: GRANT.body };
  // autocannon ends an `amount` run at its next one-second tick: the rate is timed to the last response instead.
  const started = performance.now();
  let last = started;
  const requests = numberedRequests(command, run, headers).map((r) => ({
    ...r,
    onResponse: () => {
      last = performance.now();
    },
  }));
  const result = await autocannon({ url: `${url}${command.path}`, connections, amount, requests });
  // Under heavy load a few requests may wait longer than the gate's queue timeout (503): counted, not hidden.
  if (result["2xx"] < amount * 0.99) throw new Error(`${amount - result["2xx"]} of ${amount} requests failed`);
  return Object.assign(result, { seconds: (last - started) / 1000 });
}

const CALL_SCRIPT = join(import.meta.dir, "grant-call.pgbench.sql");

/** CPU per transaction of a pgbench script: the pgbench process (its rusage) and the cluster. */
async function pgbenchCpu(databaseUrl: string, postmaster: number, script: string) {
  const clients = 16;
  const transactions = Math.ceil(grants / clients);
  const before = clusterCpuSeconds(postmaster);
  const args = ["-n", "-M", "prepared", "-c", String(clients), "-j", "2", "-t", String(transactions)];
  const proc = Bun.spawn([requirePostgresTool("pgbench"), ...args, "-f", script, databaseUrl], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`pgbench failed (exit ${code}): ${await new Response(proc.stderr).text()}`);
  await Bun.sleep(200); // the backends end and are waited for by the postmaster
  const usage = proc.resourceUsage();
  const n = clients * transactions;
  const clientSeconds = usage ? Number(usage.cpuTime.user + usage.cpuTime.system) / 1e6 : Number.NaN;
  return { clientMs: (clientSeconds * 1000) / n, postgresMs: ((clusterCpuSeconds(postmaster) - before) * 1000) / n };
}

/** Starts the counts of --statements: pg_stat_statements (created in this database) and the function counters. */
async function resetStatements(db: postgres.Sql): Promise<void> {
  await db`create extension if not exists pg_stat_statements`;
  await db`select pg_stat_statements_reset()`;
  await db`select pg_stat_reset()`;
}

/** This database's statements and functions since resetStatements, per grant, most time first. */
async function statementsPerGrant(db: postgres.Sql, n: number): Promise<string[]> {
  await Bun.sleep(1_100); // a busy backend reports its counters at most once a second
  const statements = await db<{ calls: number; ms: number; query: string }[]>`
    select calls::float8 as calls, total_exec_time::float8 as ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as query
    from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
    order by total_exec_time desc limit 15`;
  const functions = await db<{ calls: number; self: number; total: number; name: string }[]>`
    select calls::float8 as calls, self_time::float8 as self, total_time::float8 as total, schemaname || '.' || funcname as name
    from pg_stat_user_functions order by self_time desc limit 10`;
  const perGrant = (x: number) => ((x * 1000) / n).toFixed(1).padStart(7);
  const perCall = (x: number, calls: number) => ((x * 1000) / calls).toFixed(1).padStart(7);
  return [
    "statements: calls/grant  µs/grant (execution)  query",
    ...statements.map((s) => `  ${(s.calls / n).toFixed(2).padStart(6)} ${perGrant(s.ms)}  ${s.query}`),
    // A backend flushes its function counters late (an idle one after up to 10 s), so some of the warm-up's calls
    // land after the reset: each function's time is given per call, which that lag leaves as it is.
    "functions: calls/grant (the warm-up's late counts included)  self µs/call  total µs/call  name",
    ...functions.map(
      (f) =>
        `  ${(f.calls / n).toFixed(2).padStart(6)} ${perCall(f.self, f.calls)} ${perCall(f.total, f.calls)}  ${f.name}`,
    ),
  ];
}

/** The service's backends' wait events (--waits), each with its share of the samples taken inside a statement. */
function printWaits(waits: Waits): void {
  const { samples, shares } = waitShares(waits.entitlement ?? {}, 10);
  console.log(`waits: ${samples} samples of active backends`);
  for (const share of shares) console.log(`  ${share}`);
}

const tag = `gcpu${Date.now().toString(36)}`;
const binary = values.binary ?? (await stack.buildBinaries()).entitlement;
const databaseUrl = await stack.createDatabase(adminUrl, tag);
const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
let service: stack.Service | undefined;
try {
  const env = { DATABASE_URL: databaseUrl, NATS_ENABLED: "false", LOG_LEVEL: "warn" };
  const migrate = Bun.spawnSync([binary, "migrate"], { env: { ...process.env, ...env } });
  if (migrate.exitCode !== 0) throw new Error(`migrate failed: ${migrate.stderr.toString()}`);
  const auth = stack.apiAuth();
  const log = join(stack.root, ".data/bench", `${tag}.log`);
  mkdirSync(dirname(log), { recursive: true });
  service = await stack.startService("entitlement", binary, { ...env, ...auth.env }, log);
  await load(service.url, auth.headers, Math.min(2_000, grants), `${tag}-warm`);
  const [dir] = await sql<{ d: string }[]>`select current_setting('data_directory') as d`;
  const postmaster = Number(readFileSync(join(dir?.d ?? "", "postmaster.pid"), "utf8").split("\n")[0]);
  if (values.statements) await resetStatements(sql);
  const before = { service: processCpuSeconds(service.pid), pg: clusterCpuSeconds(postmaster) };
  const stopSampling = values.waits ? sampleWaits(databaseUrl, ["entitlement"], 20) : undefined;
  let waits: Promise<Waits> | undefined;
  const result = await load(service.url, auth.headers, grants, tag).finally(() => {
    waits = stopSampling?.();
  });
  if (waits) printWaits(await waits);
  const wallS = result.seconds;
  const ok = result["2xx"];
  const serviceMs = ((processCpuSeconds(service.pid) - before.service) * 1000) / ok;
  const pgMs = ((clusterCpuSeconds(postmaster) - before.pg) * 1000) / ok;
  if (values.statements) for (const line of await statementsPerGrant(sql, ok)) console.log(line);
  const pgbench = values["api-only"] ? undefined : await pgbenchCpu(databaseUrl, postmaster, PGBENCH_SCRIPT);
  const call = new URL(databaseUrl);
  call.searchParams.set("options", "-csearch_path=entitlement");
  const pgbenchCall = values["api-only"] ? undefined : await pgbenchCpu(call.toString(), postmaster, CALL_SCRIPT);
  const fixed = (n: number | undefined) => (n === undefined ? undefined : Number(n.toFixed(3)));
  console.log(
    JSON.stringify({
      grants: ok,
      non2xx: grants - ok,
      connections,
      perSecond: Math.round(ok / wallS),
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      serviceCpuMsPerGrant: Number(serviceMs.toFixed(3)),
      postgresCpuMsPerGrant: Number(pgMs.toFixed(3)),
      totalCpuMsPerGrant: Number((serviceMs + pgMs).toFixed(3)),
      pgbenchClientCpuMsPerTx: fixed(pgbench?.clientMs),
      pgbenchPostgresCpuMsPerTx: fixed(pgbench?.postgresMs),
      pgbenchTotalCpuMsPerTx: fixed(pgbench && pgbench.clientMs + pgbench.postgresMs),
      callPgbenchClientCpuMsPerTx: fixed(pgbenchCall?.clientMs),
      callPgbenchPostgresCpuMsPerTx: fixed(pgbenchCall?.postgresMs),
    }),
  );
} finally {
  await service?.stop();
  await sql.end();
  await stack.dropDatabase(adminUrl, tag);
}
