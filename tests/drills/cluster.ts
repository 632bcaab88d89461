// The drill's own PostgreSQL cluster and nats-server, in its temporary folder on free ports, so that it may stop,
// pause and restart them (the benchmark's points phase starts such a cluster too, with stock settings). The machine's
// shared PostgreSQL (5432) and NATS (4222) are never touched.
import { closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { answers, freePort, INSTALL_HINT, postgresBin, waitUntil } from "../../scripts/stack-infra.ts";

/** PostgreSQL refuses to run as root: as root, its tools run as the `postgres` user the Debian package creates. */
function asPostgres(args: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args;
}

/** Runs a tool without blocking the event loop, so the load keeps going (and keeps its clock honest) meanwhile. */
async function run(args: string[], what: string): Promise<void> {
  const proc = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`${what} failed (exit ${code}): ${stderr.trim()}`);
}

export type Postgres = {
  url: string;
  /** `pg_ctl restart -m fast`: every session is cut, the cluster is back when this resolves. */
  restart: () => Promise<void>;
  /** Fast shutdown; safe to call when it is already down. */
  stop: () => void;
};

/** `stock`: PostgreSQL's own settings (the benchmark's); otherwise fsync is off (the drill's). */
export async function startPostgres(root: string, o: { stock?: boolean } = {}): Promise<Postgres> {
  const bin = postgresBin();
  if (!bin) throw new Error(`initdb/pg_ctl not found; install them: ${INSTALL_HINT}`);
  const data = join(root, "pg");
  const port = freePort();
  if (process.getuid?.() === 0)
    await run(["install", "-d", "-o", "postgres", "-g", "postgres", "-m", "700", data], "mkdir");
  else mkdirSync(data, { recursive: true, mode: 0o700 });
  await run(asPostgres([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"]), "initdb");
  // fsync=off: the drill restarts PostgreSQL cleanly but never crashes the host, so flushing to disk proves nothing
  // here and costs the loaded 2-core machine time.
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${o.stock ? "" : " -c fsync=off"}`;
  const pgCtl = (args: string[], what: string) =>
    run(asPostgres([join(bin, "pg_ctl"), "-D", data, "-l", join(data, "server.log"), ...args]), what);
  await pgCtl(["-o", options, "-w", "start"], "pg_ctl start");
  await waitUntil(() => answers("127.0.0.1", port), 30_000, "PostgreSQL");
  let up = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: async () => {
      await pgCtl(["-m", "fast", "-w", "restart"], "pg_ctl restart");
      await waitUntil(() => answers("127.0.0.1", port), 30_000, "PostgreSQL after restart");
    },
    stop: () => {
      if (!up) return;
      up = false;
      Bun.spawnSync(asPostgres([join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"]), {
        stdout: "ignore",
        stderr: "ignore",
      });
    },
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
