// Grant throughput and end-to-end latency with the services' streams at one and at three replicas, side by side in the
// same run, on a private 3-node NATS cluster started for this phase (docs/scaling.md). A grant's 200 never waits for
// NATS (the outbox), so replication shows in the pipeline: grants answered and notified per second of wall time (load,
// then drain until every notification is SENT), and the commit-to-sent latency at a fixed rate.
import { join } from "node:path";
import postgres from "postgres";
import { startNatsCluster } from "../support/nats-cluster.ts";
import { type E2eResult, measureEndToEnd } from "./e2e.ts";
import { runGrantLoad, type ThroughputResult } from "./grants.ts";
import type { Figure } from "./report.ts";
import * as stack from "./stack.ts";

export type ReplicaFigures = {
  replicas: number;
  api: ThroughputResult;
  /** Grants answered 200 and notified, per second from the start of the load until the pipeline was quiet. */
  pipelinePerSecond: number;
  e2e: E2eResult;
};

export type ReplicaPhase = {
  adminUrl: string;
  bin: stack.Binaries;
  tag: string;
  auth: stack.ApiAuth;
  logDir: string;
  connections: number;
  seconds: number;
  rate: number;
  rateSeconds: number;
  settleMs: number;
  settle: (sql: postgres.Sql, timeoutMs: number) => Promise<boolean>;
  progress: (line: string) => void;
};

export async function measureReplicas(phase: ReplicaPhase): Promise<ReplicaFigures[]> {
  phase.progress("replicas: starting a 3-node NATS cluster");
  const cluster = await startNatsCluster({ logDir: phase.logDir });
  try {
    const figures: ReplicaFigures[] = [];
    for (const replicas of [1, 3]) figures.push(await measureOne(phase, cluster.url, replicas));
    return figures;
  } finally {
    cluster.dispose();
  }
}

async function measureOne(phase: ReplicaPhase, natsUrl: string, replicas: number): Promise<ReplicaFigures> {
  const names = stack.benchNames(`${phase.tag}r${replicas}`);
  const databaseUrl = await stack.createDatabase(phase.adminUrl, names.database);
  const common = { DATABASE_URL: databaseUrl, NATS_URL: natsUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
  const running: stack.Service[] = [];
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
  try {
    for (const service of ["entitlement", "notification"] as const) {
      const migrate = Bun.spawnSync([phase.bin[service], "migrate"], { env: { ...process.env, ...common } });
      if (migrate.exitCode !== 0) throw new Error(`${service} migrate failed: ${migrate.stderr.toString()}`);
    }
    const log = (name: string) => join(phase.logDir, `${name}-r${replicas}.log`);
    const entitlementEnv = { ...stack.entitlementEnv(names, common, phase.auth) };
    const entitlement = await stack.startService(
      "entitlement",
      phase.bin.entitlement,
      { ...entitlementEnv, ENTITLEMENT_NATS_STREAM_REPLICAS: String(replicas) },
      log("entitlement"),
    );
    running.push(entitlement);
    const notificationEnv = stack.notificationEnv(names, common, true);
    running.push(
      await stack.startService(
        "notification",
        phase.bin.notification,
        { ...notificationEnv, NOTIFICATION_NATS_STREAM_REPLICAS: String(replicas) },
        log("notification"),
      ),
    );
    const load = { url: entitlement.url, headers: phase.auth.headers, tag: `${phase.tag}r${replicas}` };
    await runGrantLoad({ ...load, connections: 16, seconds: 1 });
    await phase.settle(sql, phase.settleMs);
    phase.progress(`replicas: R${replicas}, ${phase.connections} connections, ${phase.seconds}s, then drain`);
    const started = performance.now();
    const api = await runGrantLoad({ ...load, connections: phase.connections, seconds: phase.seconds });
    await phase.settle(sql, phase.settleMs);
    const pipelinePerSecond = api.ok / ((performance.now() - started) / 1000);
    phase.progress(`replicas: R${replicas}, end-to-end at ${phase.rate}/s for ${phase.rateSeconds}s`);
    const e2e = await measureEndToEnd({
      sql,
      url: entitlement.url,
      headers: phase.auth.headers,
      rate: phase.rate,
      seconds: phase.rateSeconds,
      prefix: `e2e-r${replicas}-${phase.tag}`,
      timeoutMs: phase.settleMs,
    });
    return { replicas, api, pipelinePerSecond, e2e };
  } finally {
    for (const s of running.reverse()) await s.stop().catch(() => {});
    await sql.end({ timeout: 5 });
    await stack.dropDatabase(phase.adminUrl, names.database);
  }
}

/** The rows of the report table, one set per replica count. */
export function replicaRows(runs: ReplicaFigures[], rate: number): Figure[] {
  return runs.flatMap((r) => {
    const on = `R${r.replicas} on 3 nodes`;
    return [
      { name: `${on}: grants/s API c=${r.api.connections} (p99 ${r.api.p99Ms} ms)`, value: r.api.rps, unit: "req/s" },
      { name: `${on}: grants/s answered and notified`, value: r.pipelinePerSecond, unit: "grants/s" },
      { name: `${on}: end-to-end p50 at ${rate}/s`, value: r.e2e.p50Ms, unit: "ms" },
      { name: `${on}: end-to-end p99 at ${rate}/s (${r.e2e.delivered}/${r.e2e.sent})`, value: r.e2e.p99Ms, unit: "ms" },
    ];
  });
}
