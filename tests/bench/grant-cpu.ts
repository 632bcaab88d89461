// CPU per grant, robust to a noisy machine: the Entitlement API alone (NATS off, so no relay) on a fresh database,
// N grants through autocannon, and the CPU seconds (utime + stime from /proc) that the service process and every
// process of the PostgreSQL cluster spent meanwhile, divided by N. Other load on the machine slows the run down but
// does not add to these processes' own CPU time, so the figure holds where throughput figures do not.
//   DATABASE_URL=postgres://…/postgres bun run tests/bench/grant-cpu.ts [--grants 5000] [--connections 16]
//     [--binary path/to/entitlement] [--revoke]
// The PostgreSQL server must run on this machine (its postmaster.pid is read); use one with stock settings.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import postgres from "postgres";
import { processCpuSeconds } from "./cpu.ts";
import * as stack from "./stack.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    grants: { type: "string", default: "5000" },
    connections: { type: "string", default: "16" },
    binary: { type: "string" },
    revoke: { type: "boolean", default: false },
  },
});
const grants = Number(values.grants);
const connections = Number(values.connections);
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** Every process whose parent is the postmaster (backends, writers, checkpointer), and the postmaster. */
function clusterPids(postmaster: number): number[] {
  const pids = [postmaster];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.split(" ")[1]);
      if (ppid === postmaster) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** CPU seconds of a set of processes, each counted from its first reading (a backend that ends takes its time along). */
function cpuOf(pids: number[]): number {
  return pids.reduce((sum, pid) => sum + processCpuSeconds(pid), 0);
}

async function load(url: string, headers: Record<string, string>, amount: number, run: string) {
  let i = 0;
  const path = values.revoke ? "revokes" : "grants";
  const result = await autocannon({
    url: `${url}/v1/entitlements/${path}`,
    connections,
    amount,
    requests: [
      {
        method: "POST",
        setupRequest: (request) => {
          const n = i++;
          return {
            ...request,
            headers: { ...headers, "content-type": "application/json", "idempotency-key": `k-${run}-${n}` },
            body: JSON.stringify({
              user_id: `u-${run}-${n}`,
              stock_keeping_unit: `sku-${n}`,
              reason: "bench",
              purchase_id: `p-${run}-${n}`,
            }),
          };
        },
      },
    ],
  });
  if (result["2xx"] !== amount) throw new Error(`${amount - result["2xx"]} of ${amount} requests failed`);
  return result;
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
  service = await stack.startService("entitlement", binary, { ...env, ...auth.env }, join("/tmp", `${tag}.log`));
  await load(service.url, auth.headers, Math.min(2_000, grants), `${tag}-warm`);
  const [dir] = await sql<{ d: string }[]>`select current_setting('data_directory') as d`;
  const postmaster = Number(readFileSync(join(dir?.d ?? "", "postmaster.pid"), "utf8").split("\n")[0]);
  const pg = clusterPids(postmaster);
  const before = { service: processCpuSeconds(service.pid), pg: cpuOf(pg) };
  const started = performance.now();
  const result = await load(service.url, auth.headers, grants, tag);
  const wallS = (performance.now() - started) / 1000;
  const serviceMs = ((processCpuSeconds(service.pid) - before.service) * 1000) / grants;
  const pgMs = ((cpuOf(pg) - before.pg) * 1000) / grants;
  console.log(
    JSON.stringify({
      grants,
      connections,
      perSecond: Math.round(grants / wallS),
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      serviceCpuMsPerGrant: Number(serviceMs.toFixed(3)),
      postgresCpuMsPerGrant: Number(pgMs.toFixed(3)),
      totalCpuMsPerGrant: Number((serviceMs + pgMs).toFixed(3)),
    }),
  );
} finally {
  await service?.stop();
  await sql.end();
  await stack.dropDatabase(adminUrl, tag);
}
