// The pipeline-cost phase's own PostgreSQL cluster (stock settings, pg_stat_statements preloaded) and nats-server, in
// temporary folders on free ports: every process of them serves this measurement alone, so their CPU time is its cost.
// The machine's shared PostgreSQL and NATS (which other runs load) are never touched.
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { natsServer } from "../../tools/infra/nats.ts";
import { postmasterPid } from "../../tools/infra/postgres.ts";
import { startPostgresNode } from "../support/postgres-node.ts";

export type OwnPostgres = { url: string; postmasterPid: number; stop: () => void };

/**
 * A cluster of tests/support/postgres-node.ts with the stock settings (autovacuum on, fsync on), except what the
 * measurement needs: pg_stat_statements, to count the statements each service runs per event. `stop` also removes it.
 */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const node = await startPostgresNode({
    label: "bench-pipeline",
    settings: "-c shared_preload_libraries=pg_stat_statements -c max_connections=200",
  });
  const pid = postmasterPid(node.data);
  if (!pid) {
    node.dispose();
    throw new Error("the bench's PostgreSQL started without a postmaster.pid");
  }
  return { url: node.url, postmasterPid: pid, stop: node.dispose };
}

export type OwnNats = { url: string; pid: number; stop: () => Promise<void> };

export async function startOwnNats(dir: string): Promise<OwnNats> {
  const store = join(dir, "nats");
  mkdirSync(store, { recursive: true });
  const server = natsServer({ store, log: join(dir, "nats-server.log") });
  await server.start();
  return { url: server.url, pid: server.pid() as number, stop: () => server.stop("SIGTERM") };
}

/** Removes the folder of a stopped cluster and server (as root, PostgreSQL's files belong to `postgres`). */
export function removeOwnInfra(dir: string): void {
  if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
}
