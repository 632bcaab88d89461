// PostgreSQL and NATS for the local stack: use the ones that answer, otherwise start the machine's own binaries with
// their data in .data/ of the repository (ignored by git). Only what this file starts is stopped again.
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";

export const INSTALL_HINT = "apt-get install postgresql nats-server";

export type Started = { name: string; stop: () => Promise<void> };

/** True when something accepts TCP connections on host:port within `timeoutMs`. */
export function answers(host: string, port: number, timeoutMs = 1_500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

export function hostPort(url: string, defaultPort: number): { host: string; port: number } {
  const u = new URL(url.split(",")[0] as string);
  return { host: u.hostname || "127.0.0.1", port: Number(u.port) || defaultPort };
}

export function freePort(): number {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = server.port as number;
  server.stop(true);
  return port;
}

export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs / 1000}s`);
    await Bun.sleep(200);
  }
}

/** The newest /usr/lib/postgresql/<version>/bin that has initdb and pg_ctl. */
export function postgresBin(): string | undefined {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  return versions
    .map((v) => join(base, v, "bin"))
    .find((bin) => existsSync(join(bin, "initdb")) && existsSync(join(bin, "pg_ctl")));
}

function run(args: string[], what: string): void {
  const r = Bun.spawnSync(args, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${what} failed (exit ${r.exitCode}): ${r.stderr.toString().trim()}`);
}

/** PostgreSQL refuses to run as root: as root, run its tools as the `postgres` user the Debian package creates. */
function asPostgresUser(args: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args;
}

export async function startPostgres(bin: string, dataRoot: string): Promise<Started & { url: string }> {
  const data = join(dataRoot, "pg");
  const port = freePort();
  mkdirSync(dataRoot, { recursive: true });
  if (process.getuid?.() === 0) run(["install", "-d", "-o", "postgres", "-g", "postgres", "-m", "700", data], "mkdir");
  if (!existsSync(join(data, "PG_VERSION"))) {
    run(asPostgresUser([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"]), "initdb");
  }
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=`;
  run(
    asPostgresUser([join(bin, "pg_ctl"), "-D", data, "-o", options, "-l", join(data, "server.log"), "-w", "start"]),
    "pg_ctl start",
  );
  await waitUntil(() => answers("127.0.0.1", port), 30_000, "PostgreSQL");
  return {
    name: `PostgreSQL (${data}, port ${port})`,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: async () => run(asPostgresUser([join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"]), "pg_ctl stop"),
  };
}

export async function startNats(binary: string, dataRoot: string): Promise<Started & { url: string }> {
  const store = join(dataRoot, "nats");
  mkdirSync(store, { recursive: true });
  const port = freePort();
  // Its own process group, as the services': a terminal's Ctrl-C reaches only the stack, which stops it once.
  const proc = Bun.spawn([binary, "-js", "-sd", store, "-a", "127.0.0.1", "-p", String(port)], {
    detached: true,
    stdout: "ignore",
    stderr: Bun.file(join(dataRoot, "nats-server.log")),
  });
  await waitUntil(async () => proc.exitCode === null && (await answers("127.0.0.1", port)), 30_000, "nats-server");
  return {
    name: `nats-server (${store}, port ${port})`,
    url: `nats://127.0.0.1:${port}`,
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
