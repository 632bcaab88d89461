// Loopback ports and reachability, for whatever starts a PostgreSQL or nats-server of its own (tools/infra/postgres.ts,
// tools/infra/nats.ts) or looks for one already running: the local stack, the test backend, the drills and the bench.
import { connect } from "node:net";

/** What to install when neither a server nor its binaries are found. */
export const INSTALL_HINT = "apt-get install postgresql nats-server";

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

/** The first host of a URL (a multi-host one lists several, comma-separated) and its port. */
export function hostPort(url: string, defaultPort: number): { host: string; port: number } {
  const u = new URL(url.split(",")[0] as string);
  return { host: u.hostname || "127.0.0.1", port: Number(u.port) || defaultPort };
}

/** A TCP port nobody listens on right now. Another process may take it before the bind: starters retry or fail loudly. */
export function freePort(): number {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = server.port as number;
  server.stop(true);
  return port;
}
