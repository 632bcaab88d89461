// A private PostgreSQL cluster from the machine's own binaries, on a free loopback port, for tests that need settings
// the shared PostgreSQL cannot have (TLS, pg_hba.conf) or that stop it. The shared PostgreSQL is never touched.
// tests/support/postgres-pair.ts builds its primary and standby from the same pieces.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { answers, freePort, INSTALL_HINT, postgresBin } from "../../tools/stack-infra.ts";
import { waitUntil } from "./wait.ts";

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

/** A node under `folder` on a free port; nothing is created yet. */
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

/** Immediate stop, without waiting for clients; safe when it is not running. */
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

export function requirePostgresBin(): string {
  const bin = postgresBin();
  if (!bin) throw new Error(`initdb/pg_ctl not found; install them: ${INSTALL_HINT}`);
  return bin;
}

export type PostgresNode = PgNode & {
  /** Stops the server (immediate) and removes its folder. */
  dispose: () => void;
};

/**
 * One cluster with stock settings plus `settings` (each `-c name=value`); `files` are written into the data folder
 * before the start, owned by the server's user with the given mode (a TLS key must be 0600), `pg_hba.conf` included.
 */
export async function startPostgresNode(options: {
  label: string;
  settings?: string;
  files?: Record<string, { text: string; mode: number }>;
}): Promise<PostgresNode> {
  const bin = requirePostgresBin();
  const folder = clusterFolder(`${options.label}-`);
  const node = pgNode(folder, "pg");
  const dispose = () => {
    stopNode(bin, node);
    rmSync(folder, { recursive: true, force: true });
  };
  try {
    await makeDataFolder(node);
    await initdb(bin, node);
    for (const [name, { text, mode }] of Object.entries(options.files ?? {})) {
      const path = join(node.data, name);
      writeFileSync(path, text, { mode });
      chmodSync(path, mode);
      if (process.getuid?.() === 0) await exec(["chown", "postgres:postgres", path], `chown ${name}`);
    }
    await pgCtl(bin, node, ["-o", serverOptions(node, options.settings), "-w", "start"], "pg_ctl start");
    await waitUntil(() => answers("127.0.0.1", node.port), `${options.label} PostgreSQL to listen`, 30_000);
  } catch (error) {
    dispose();
    throw error;
  }
  return { ...node, dispose };
}

/** Why a test of PostgreSQL over TLS cannot run here (no initdb/pg_ctl, or no openssl to make its certificates). */
export function tlsClusterMissing(): string | undefined {
  if (!postgresBin()) return `PostgreSQL's initdb/pg_ctl are not installed (${INSTALL_HINT})`;
  if (!Bun.which("openssl")) return "openssl is not installed (apt-get install openssl)";
  return undefined;
}

/** postgresql.auto.conf lines that turn TLS on with `server.crt`/`server.key` (and `ca.crt` for client certificates). */
export function tlsSettings(options: { clientCa?: boolean } = {}): string {
  const lines = ["ssl = on", "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'"];
  if (options.clientCa) lines.push("ssl_ca_file = 'ca.crt'");
  return `${lines.join("\n")}\n`;
}

/** Makes a running server present `<name>.crt`/`<name>.key` of its data folder to new connections (a reload). */
export async function presentCertificate(admin: { unsafe: (query: string) => PromiseLike<unknown> }, name: string) {
  await admin.unsafe(`alter system set ssl_cert_file = '${name}.crt'`);
  await admin.unsafe(`alter system set ssl_key_file = '${name}.key'`);
  await admin.unsafe("select pg_reload_conf()");
}
