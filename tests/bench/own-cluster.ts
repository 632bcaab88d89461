// The pipeline-cost phase's own PostgreSQL cluster (stock settings, pg_stat_statements preloaded) and nats-server, in a
// temporary folder on free ports: every process of them serves this measurement alone, so their CPU time is its cost.
// The machine's shared PostgreSQL and NATS (which other runs load) are never touched.
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { answers, freePort, INSTALL_HINT, postgresBin, waitUntil } from "../../scripts/stack-infra.ts";

/** PostgreSQL refuses to run as root: as root, its tools run as the `postgres` user the Debian package creates. */
function asPostgres(args: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args;
}

function run(args: string[], what: string): void {
  const r = Bun.spawnSync(args, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${what} failed (exit ${r.exitCode}): ${r.stderr.toString().trim()}`);
}

export type OwnPostgres = { url: string; postmasterPid: number; stop: () => void };

/**
 * initdb and start a cluster with the stock settings (autovacuum on, fsync on), except what the measurement needs:
 * pg_stat_statements, to count the statements each service runs per event.
 */
export async function startOwnPostgres(dir: string): Promise<OwnPostgres> {
  const bin = postgresBin();
  if (!bin) throw new Error(`initdb/pg_ctl not found; install them: ${INSTALL_HINT}`);
  const data = join(dir, "pg");
  const port = freePort();
  if (process.getuid?.() === 0) run(["install", "-d", "-o", "postgres", "-g", "postgres", "-m", "700", data], "mkdir");
  else mkdirSync(data, { recursive: true, mode: 0o700 });
  run(asPostgres([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"]), "initdb");
  const options = [
    `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=`,
    "-c shared_preload_libraries=pg_stat_statements -c max_connections=200",
  ].join(" ");
  const log = join(data, "server.log");
  run(asPostgres([join(bin, "pg_ctl"), "-D", data, "-o", options, "-l", log, "-w", "start"]), "pg_ctl start");
  await waitUntil(() => answers("127.0.0.1", port), 30_000, "PostgreSQL");
  const postmasterPid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
  let up = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    postmasterPid,
    stop: () => {
      if (!up) return;
      up = false;
      Bun.spawnSync(asPostgres([join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"]), {
        stdout: "ignore",
        stderr: "ignore",
      });
    },
  };
}

export type OwnNats = { url: string; pid: number; stop: () => Promise<void> };

export async function startOwnNats(dir: string): Promise<OwnNats> {
  const binary = Bun.which("nats-server", { PATH: `${process.env.PATH}:/usr/sbin:/sbin` });
  if (!binary) throw new Error(`nats-server not found; install it: ${INSTALL_HINT}`);
  const store = join(dir, "nats");
  mkdirSync(store, { recursive: true });
  const port = freePort();
  const proc = Bun.spawn([binary, "-js", "-sd", store, "-a", "127.0.0.1", "-p", String(port)], {
    stdout: "ignore",
    stderr: Bun.file(join(dir, "nats-server.log")),
  });
  await waitUntil(async () => proc.exitCode === null && (await answers("127.0.0.1", port)), 30_000, "nats-server");
  return {
    url: `nats://127.0.0.1:${port}`,
    pid: proc.pid,
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** Removes the folder of a stopped cluster and server (as root, PostgreSQL's files belong to `postgres`). */
export function removeOwnInfra(dir: string): void {
  if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
}
