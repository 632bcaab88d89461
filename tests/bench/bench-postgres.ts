// Where `bun run bench` keeps its data: by default a PostgreSQL cluster of its own (tests/support/postgres-node.ts),
// initdb's stock settings (autovacuum and fsync on) except what the run needs, each deviation with its reason; the
// machine's shared server (autovacuum off, other runs' load) would skew every figure. `--use-database-url` runs on
// DATABASE_URL's server instead (a managed or remote PostgreSQL, or a quick look on the shared one).
// The points and pipeline phases start clusters of their own either way (points-phase.ts, pipeline.ts).
import { dirname } from "node:path";
import { postmasterPid, requirePostgresBin, stopNode } from "../../tools/infra/postgres.ts";
import { type PostgresNode, startPostgresNode } from "../support/postgres-node.ts";

/** initdb's max_connections. */
const STOCK_MAX_CONNECTIONS = 100;

/** A setting that differs from initdb's, and why. */
export type Deviation = { name: string; value: string; why: string };

export type BenchPostgresReport = {
  /** `own`: a cluster started for this run; `DATABASE_URL`: the server the environment named. */
  cluster: "own" | "DATABASE_URL";
  deviations: Deviation[];
  /** The own cluster's loopback port (DATABASE_URL's is not reported: the URL may carry a password). */
  port?: number;
};

export type BenchPostgres = BenchPostgresReport & {
  adminUrl: string;
  /** The own cluster's postmaster, whose children's CPU a phase can split by kind (cpu.ts); unset for DATABASE_URL. */
  postmasterPid?: number;
  /** Stops the own cluster and removes its folder (`keep`: stops it and leaves the folder); nothing for DATABASE_URL. */
  dispose: (keep: boolean) => string | undefined;
};

/**
 * What the phases on this cluster need beyond the stock settings: pgbench's clients at the highest level while both
 * services hold their pools (DATABASE_POOL_MAX each, plus a LISTEN connection and a spare), the harness's own
 * connections, and room for connections still closing from the phase before.
 */
export function benchDeviations(o: { connections: number[]; poolMax: number }): Deviation[] {
  const clients = Math.max(...o.connections);
  const needed = clients + 2 * (o.poolMax + 2) + 20;
  if (needed <= STOCK_MAX_CONNECTIONS) return [];
  const value = Math.ceil(needed / 10) * 10;
  const why = `pgbench's ${clients} clients + 2 services × (pool ${o.poolMax} + 2) + 20 spare > stock ${STOCK_MAX_CONNECTIONS}`;
  return [{ name: "max_connections", value: String(value), why }];
}

export const describeBenchPostgres = (r: BenchPostgresReport) =>
  r.cluster === "DATABASE_URL"
    ? "PostgreSQL: DATABASE_URL's server, its settings as they are (--use-database-url)"
    : `PostgreSQL: a cluster of its own, stock settings${
        r.deviations.length === 0
          ? ""
          : ` except ${r.deviations.map((d) => `${d.name}=${d.value} (${d.why})`).join(", ")}`
      }`;

export async function openBenchPostgres(o: {
  useDatabaseUrl: boolean;
  databaseUrl: string;
  connections: number[];
}): Promise<BenchPostgres> {
  if (o.useDatabaseUrl) {
    return { cluster: "DATABASE_URL", deviations: [], adminUrl: o.databaseUrl, dispose: () => undefined };
  }
  const poolMax = Number(process.env.DATABASE_POOL_MAX ?? 10);
  const deviations = benchDeviations({ connections: o.connections, poolMax });
  const node: PostgresNode = await startPostgresNode({
    label: "bench-pg",
    settings: deviations.map((d) => `-c ${d.name}=${d.value}`).join(" "),
  });
  return {
    cluster: "own",
    deviations,
    port: node.port,
    adminUrl: node.url,
    postmasterPid: postmasterPid(node.data),
    dispose: (keep) => {
      if (!keep) return void node.dispose();
      stopNode(requirePostgresBin(), node);
      return dirname(node.data);
    },
  };
}
