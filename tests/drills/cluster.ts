// The drill's own PostgreSQL cluster and nats-server, in its temporary folder on free ports, so that it may stop,
// pause and restart them (the benchmark's points phase starts such a cluster too, with stock settings). The machine's
// shared PostgreSQL (5432) and NATS (4222) are never touched.
import { closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { answers, freePort, INSTALL_HINT, waitUntil } from "../../tools/stack-infra.ts";
import {
  initdb,
  makeDataFolder,
  pgCtl,
  pgNode,
  requirePostgresBin,
  serverOptions,
  stopNode,
} from "../support/postgres-node.ts";

export type Postgres = {
  url: string;
  /** `pg_ctl restart -m fast`: every session is cut, the cluster is back when this resolves. */
  restart: () => Promise<void>;
  /** Fast shutdown; safe to call when it is already down. */
  stop: () => void;
};

/** `stock`: PostgreSQL's own settings (the benchmark's); otherwise fsync is off (the drill's). */
export async function startPostgres(root: string, o: { stock?: boolean } = {}): Promise<Postgres> {
  const bin = requirePostgresBin();
  const node = pgNode(root, "pg");
  await makeDataFolder(node);
  await initdb(bin, node);
  // fsync=off: the drill restarts PostgreSQL cleanly but never crashes the host, so flushing to disk proves nothing
  // here and costs the loaded 2-core machine time.
  await pgCtl(bin, node, ["-o", serverOptions(node, o.stock ? "" : "-c fsync=off"), "-w", "start"], "pg_ctl start");
  await waitUntil(() => answers("127.0.0.1", node.port), 30_000, "PostgreSQL");
  return {
    url: node.url,
    restart: async () => {
      await pgCtl(bin, node, ["-m", "fast", "-w", "restart"], "pg_ctl restart");
      await waitUntil(() => answers("127.0.0.1", node.port), 30_000, "PostgreSQL after restart");
    },
    stop: () => stopNode(bin, node),
  };
}

export type Nats = {
  url: string;
  /** SIGTERM and wait for the exit (JetStream flushes its store on a clean stop). */
  stop: () => Promise<void>;
  /** Starts it again on the same port and store. */
  start: () => Promise<void>;
  pause: () => void;
  resume: () => void;
  /** Last resort at exit: SIGCONT then SIGKILL, synchronously. */
  kill: () => void;
};

export async function startNats(root: string): Promise<Nats> {
  const binary = Bun.which("nats-server", { PATH: `${process.env.PATH}:/usr/sbin:/sbin` });
  if (!binary) throw new Error(`nats-server not found; install it: ${INSTALL_HINT}`);
  const store = join(root, "nats");
  mkdirSync(store, { recursive: true });
  const port = freePort();
  let proc: Subprocess | undefined;
  const start = async () => {
    const log = openSync(join(root, "logs", "nats-server.log"), "a");
    const p = Bun.spawn([binary, "-js", "-sd", store, "-a", "127.0.0.1", "-p", String(port)], {
      stdout: "ignore",
      stderr: log,
    });
    closeSync(log);
    proc = p;
    await waitUntil(async () => p.exitCode === null && (await answers("127.0.0.1", port)), 30_000, "nats-server");
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    start,
    stop: async () => {
      const p = proc;
      proc = undefined;
      p?.kill("SIGTERM");
      await p?.exited;
    },
    pause: () => proc?.kill("SIGSTOP"),
    resume: () => proc?.kill("SIGCONT"),
    kill: () => {
      proc?.kill("SIGCONT");
      proc?.kill("SIGKILL");
    },
  };
}
