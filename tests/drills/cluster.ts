// The drill's own PostgreSQL cluster and nats-server (tools/infra), in its temporary folder on free ports, so that it
// may stop, pause and restart them (the benchmark's points phase starts such a cluster too, with stock settings). The
// machine's shared PostgreSQL (5432) and NATS (4222) are never touched.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type NatsServer, natsServer } from "../../tools/infra/nats.ts";
import { pgNode, startPostgres as startCluster } from "../../tools/infra/postgres.ts";

export type Postgres = {
  url: string;
  /** `pg_ctl restart -m fast`: every session is cut, the cluster is back when this resolves. */
  restart: () => Promise<void>;
  /** Immediate shutdown, synchronously; safe to call when it is already down. */
  stop: () => void;
};

/** `stock`: PostgreSQL's own settings (the benchmark's); otherwise fsync is off (the drill's). */
export async function startPostgres(root: string, o: { stock?: boolean } = {}): Promise<Postgres> {
  // fsync=off: the drill restarts PostgreSQL cleanly but never crashes the host, so flushing to disk proves nothing
  // here and costs the loaded 2-core machine time.
  const server = await startCluster(pgNode(root, "pg"), { settings: o.stock ? "" : "-c fsync=off" });
  return { url: server.url, restart: server.restart, stop: server.kill };
}

/** `stop` is SIGTERM (JetStream flushes its store on a clean stop); `start` starts it again on the same port and store. */
export type Nats = Pick<NatsServer, "url" | "start" | "pause" | "resume" | "kill"> & { stop: () => Promise<void> };

export async function startNats(root: string): Promise<Nats> {
  const store = join(root, "nats");
  mkdirSync(store, { recursive: true });
  const server = natsServer({ store, log: join(root, "logs", "nats-server.log") });
  await server.start();
  return { ...server, stop: () => server.stop("SIGTERM") };
}
