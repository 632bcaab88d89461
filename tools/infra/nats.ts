// One way to run a nats-server with JetStream from the machine's own binary, on loopback: the local stack (its store in
// .data/nats), the test backend, private test servers and clusters (tests/support/nats-server.ts, nats-cluster.ts),
// the drills and the benchmark all start theirs with natsServer. A server this starts is the only one it stops.
import { closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { hidesMachineBinary, installHint } from "./machine.ts";
import { answers, freePort } from "./net.ts";
import { waitUntil } from "./wait.ts";

/**
 * The nats-server binary, wherever Debian's package or a manual install put it; undefined when there is none (or
 * HIDE_MACHINE_BINARIES names nats-server).
 */
export const natsServerBinary: string | undefined = hidesMachineBinary("nats-server")
  ? undefined
  : (["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].find(existsSync) ??
    Bun.which("nats-server", { PATH: `${process.env.PATH}:/usr/sbin:/sbin` }) ??
    undefined);

export function requireNatsServer(): string {
  if (!natsServerBinary) throw new Error(`nats-server not found; ${installHint(["nats-server"])}`);
  return natsServerBinary;
}

export type NatsServer = {
  url: string;
  port: number;
  /** The process id while it runs. */
  pid: () => number | undefined;
  running: () => boolean;
  /** Starts the server (same port and store every time) and waits until it accepts connections. */
  start: () => Promise<void>;
  /** SIGTERM (a clean stop: JetStream flushes its store) or SIGKILL (a crash); resolves once the process is gone. */
  stop: (signal?: "SIGTERM" | "SIGKILL") => Promise<void>;
  pause: () => void;
  resume: () => void;
  /** SIGCONT then SIGKILL, synchronously (it also runs from an exit handler). */
  kill: () => void;
};

export type NatsServerOptions = {
  /** The JetStream store folder. */
  store: string;
  port?: number;
  /** Extra flags (`--user`, `--tls`, a cluster's `--routes`, ...). */
  args?: string[];
  /** The URL's scheme: `tls` for a server that requires TLS (the readiness probe is a TCP connect either way). */
  scheme?: "nats" | "tls";
  /** The server's log (appended); none when omitted. */
  log?: string;
  /** Its own process group, so a terminal's Ctrl-C reaches only whoever started it, which stops it once. */
  detached?: boolean;
};

/** A nats-server with JetStream on 127.0.0.1 (a free port unless given), not started until `start()`. */
export function natsServer(options: NatsServerOptions): NatsServer {
  const binary = requireNatsServer();
  const port = options.port ?? freePort();
  const args = [binary, "-js", "-sd", options.store, "-a", "127.0.0.1", "-p", String(port), ...(options.args ?? [])];
  let proc: Subprocess | undefined;
  const running = () => proc !== undefined && proc.exitCode === null;
  return {
    url: `${options.scheme ?? "nats"}://127.0.0.1:${port}`,
    port,
    pid: () => (running() ? proc?.pid : undefined),
    running,
    start: async () => {
      const log = options.log ? openSync(options.log, "a") : undefined;
      const p = Bun.spawn(args, { stdout: "ignore", stderr: log ?? "ignore", detached: options.detached ?? false });
      if (log !== undefined) closeSync(log);
      proc = p;
      await waitUntil(
        async () => {
          if (p.exitCode !== null) throw new Error(`nats-server on port ${port} exited with ${p.exitCode}`);
          return answers("127.0.0.1", port);
        },
        `nats-server on port ${port} to listen`,
        30_000,
        50,
      );
    },
    stop: async (signal = "SIGTERM") => {
      const p = proc;
      proc = undefined;
      p?.kill("SIGCONT");
      p?.kill(signal);
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

/**
 * The server of the local stack or the test backend: its store kept in `dataRoot`/nats from one run to the next, in a
 * process group of its own, so that a terminal's Ctrl-C reaches only whoever started it, which stops it once.
 */
export async function startKeptNats(
  dataRoot: string,
): Promise<{ name: string; url: string; stop: () => Promise<void> }> {
  const store = join(dataRoot, "nats");
  mkdirSync(store, { recursive: true });
  const server = natsServer({ store, log: join(dataRoot, "nats-server.log"), detached: true });
  await server.start();
  return { name: `nats-server (${store}, port ${server.port})`, url: server.url, stop: () => server.stop() };
}
