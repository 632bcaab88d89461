// Loopback ports and reachability, for whatever starts a PostgreSQL or nats-server of its own (tools/infra/postgres.ts,
// tools/infra/nats.ts) or looks for one already running: the local stack, the test backend, the drills and the bench.
import { readFileSync } from "node:fs";
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

/** The kernel's range of ephemeral ports (the source ports of outgoing connections); Linux's default elsewhere. */
export function ephemeralPorts(): [number, number] {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (low && high) return [low, high];
  } catch {}
  return [32768, 60999];
}

const LOWEST_PORT = 10_000;

/**
 * A TCP port nobody listens on right now, below the ephemeral range: a server killed and started again on its port
 * (the drills, the soak) finds it free, where a port of that range may meanwhile be the source port of one of the
 * machine's outgoing connections (thousands of them under load), and the restart fails with "address in use". Another
 * process may still take it before the bind: starters retry or fail loudly.
 */
export function freePort(): number {
  const [low] = ephemeralPorts();
  for (let tries = 0; low - LOWEST_PORT > 1_000 && tries < 50; tries++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (low - LOWEST_PORT));
    try {
      Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response() }).stop(true);
      return port;
    } catch {}
  }
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = server.port as number;
  server.stop(true);
  return port;
}
