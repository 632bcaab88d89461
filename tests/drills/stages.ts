// What a group of scenarios runs on. `single`: one PostgreSQL and one nats-server (the faults of one machine). `nats-cluster`:
// a 3-node NATS cluster with the services' streams at three replicas. `pg-standby`: a PostgreSQL primary with a
// synchronous streaming standby, the services given both hosts with target_session_attrs=read-write. Each stage has its
// own folder, processes and fleet, and is torn down before the next one starts (the machine has two cores).
// `pg-auto-failover`: the same with a pg_auto_failover formation (monitor, primary, synchronous secondary) whose
// monitor, not the drill, promotes.
import { chmodSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { type NatsCluster, startNatsCluster } from "../support/nats-cluster.ts";
import { type Formation, startFormation } from "../support/pg-auto-failover.ts";
import { type PostgresPair, startPostgresPair } from "../support/postgres-pair.ts";
import { type Nats, type Postgres, startNats, startPostgres } from "./cluster.ts";
import { createFleet, type Fleet, killFleet } from "./services.ts";

export type Topology = "single" | "nats-cluster" | "pg-standby" | "pg-auto-failover";

export const TOPOLOGIES: Record<Topology, string> = {
  single: "one PostgreSQL, one nats-server",
  "nats-cluster": "one PostgreSQL, a 3-node NATS cluster, streams at 3 replicas",
  "pg-standby": "a PostgreSQL primary with a synchronous standby, one nats-server",
  "pg-auto-failover": "a pg_auto_failover formation (monitor, primary, synchronous secondary), one nats-server",
};

/** The processes one topology runs on; a scenario takes the ones it faults. */
export type Infra = {
  pg?: Postgres;
  nats?: Nats;
  natsCluster?: NatsCluster;
  pgPair?: PostgresPair;
  formation?: Formation;
};

export type Stage = {
  topology: Topology;
  infra: Infra;
  fleet: Fleet;
  /** The drill's own connection (superuser), following a failover like the services do. */
  sql: postgres.Sql;
  /** The NATS the services use (several servers comma-separated for a cluster), for the drill's matchmaker. */
  natsUrl: string;
  /** Drains the services (SIGTERM), closes the drill's connection, then stops the infrastructure. */
  stop: () => Promise<void>;
  /** Synchronous last resort, also from the exit handler: kills whatever still runs. */
  kill: () => void;
};

export function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`this scenario needs ${what}`);
  return value;
}

/** Starts the processes of `topology`; when one fails to start, those already started are stopped again. */
async function startInfra(
  topology: Topology,
  folder: string,
): Promise<{ infra: Infra; databaseUrl: string; natsUrl: string }> {
  const infra: Infra = {};
  try {
    if (topology === "pg-standby") {
      infra.pgPair = await startPostgresPair(join(folder, "pg"));
      infra.nats = await startNats(folder);
      return { infra, databaseUrl: infra.pgPair.url, natsUrl: infra.nats.url };
    }
    if (topology === "pg-auto-failover") {
      infra.formation = await startFormation(join(folder, "pg"));
      infra.nats = await startNats(folder);
      return { infra, databaseUrl: infra.formation.url, natsUrl: infra.nats.url };
    }
    infra.pg = await startPostgres(folder);
    if (topology === "nats-cluster") {
      infra.natsCluster = await startNatsCluster({ root: join(folder, "nats"), logDir: join(folder, "logs") });
      return { infra, databaseUrl: infra.pg.url, natsUrl: infra.natsCluster.url };
    }
    infra.nats = await startNats(folder);
    return { infra, databaseUrl: infra.pg.url, natsUrl: infra.nats.url };
  } catch (error) {
    killInfra(infra, false);
    throw error;
  }
}

function killInfra(infra: Infra, keep: boolean): void {
  infra.nats?.kill();
  infra.natsCluster?.dispose(keep);
  infra.pg?.stop();
  infra.pgPair?.dispose(keep);
  infra.formation?.dispose();
}

/** Starts the infrastructure of `topology` under `root/<topology>` and the fleet on it; the services are ready. */
export async function startStage(
  topology: Topology,
  options: { root: string; dist: string; keep: boolean; log: (line: string) => void },
): Promise<Stage> {
  const folder = join(options.root, topology);
  mkdirSync(join(folder, "logs"), { recursive: true });
  chmodSync(folder, 0o755); // PostgreSQL runs as its own user and must reach its data folder inside.
  const { infra, databaseUrl, natsUrl } = await startInfra(topology, folder);
  options.log(`${TOPOLOGIES[topology]}: PostgreSQL ${databaseUrl}, NATS ${natsUrl}`);
  const replicas = topology === "nats-cluster" ? "3" : "1";
  const fleet = createFleet({
    dist: options.dist,
    logDir: join(folder, "logs"),
    databaseUrl,
    natsUrl,
    env: { ENTITLEMENT_NATS_STREAM_REPLICAS: replicas, NOTIFICATION_NATS_STREAM_REPLICAS: replicas },
  });
  const sql = postgres(databaseUrl, { max: 2, connect_timeout: 5, idle_timeout: 5, onnotice: () => {} });
  const kill = () => {
    killFleet(fleet);
    killInfra(infra, options.keep);
  };
  try {
    // One at a time: the first migrates, the others find the schema in place.
    for (const s of fleet.all) await s.start();
  } catch (error) {
    kill();
    throw error;
  }
  return {
    topology,
    infra,
    fleet,
    sql,
    natsUrl,
    kill,
    stop: async () => {
      await Promise.all(fleet.all.map((s) => s.signal("SIGTERM", 20_000)));
      await sql.end({ timeout: 5 });
      killInfra(infra, options.keep);
    },
  };
}
