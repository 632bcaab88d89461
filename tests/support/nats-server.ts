// A private nats-server (JetStream, its own store folder, a free port) for tests that stop and restart the broker:
// the shared NATS at NATS_URL is never touched. `binary` is undefined when nats-server is not installed.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConnectionOptions, connect, type NatsConnection } from "@nats-io/transport-node";
import { freePort } from "./process.ts";

export const natsServerBinary: string | undefined =
  ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].find(existsSync) ??
  Bun.which("nats-server") ??
  undefined;

export type PrivateNats = {
  url: string;
  port: number;
  running: () => boolean;
  /** Starts the server (same port and store every time) and waits until it accepts connections. */
  start: () => Promise<void>;
  /** SIGTERM (a clean stop) or SIGKILL (a crash); resolves once the process is gone. */
  stop: (signal?: "SIGTERM" | "SIGKILL") => Promise<void>;
  /** Stops the server and removes its store. */
  dispose: () => Promise<void>;
};

/**
 * `args` are extra nats-server flags (`--user`, `--pass`, `--tls`, ...); `scheme` is the URL's (`tls` for a server
 * that requires TLS). The readiness probe is a TCP connect, so it works with either.
 */
export function privateNats(label: string, options: { args?: string[]; scheme?: "nats" | "tls" } = {}): PrivateNats {
  if (!natsServerBinary) throw new Error("nats-server is not installed");
  const binary = natsServerBinary;
  const port = freePort();
  const store = mkdtempSync(join(tmpdir(), `${label}-nats-`));
  let server: ReturnType<typeof Bun.spawn> | undefined;
  const stop = async (signal: "SIGTERM" | "SIGKILL" = "SIGTERM") => {
    server?.kill(signal);
    await server?.exited;
    server = undefined;
  };
  return {
    url: `${options.scheme ?? "nats"}://127.0.0.1:${port}`,
    port,
    running: () => server !== undefined,
    start: async () => {
      server = Bun.spawn(
        [binary, "-js", "-a", "127.0.0.1", "-p", String(port), "-sd", store, ...(options.args ?? [])],
        {
          stdout: "ignore",
          stderr: "ignore",
        },
      );
      const deadline = Date.now() + 15_000;
      for (;;) {
        const probe = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).catch(() => undefined);
        if (probe) {
          probe.end();
          return;
        }
        if (Date.now() > deadline) throw new Error(`private nats-server on ${port} did not start`);
        await Bun.sleep(50);
      }
    },
    stop,
    dispose: async () => {
      await stop("SIGKILL");
      rmSync(store, { recursive: true, force: true });
    },
  };
}

/** "connected" when a client can connect with `options`, or the message it was refused with. */
export async function connectOutcome(options: ConnectionOptions): Promise<string> {
  return connect({ timeout: 5_000, ...options }).then(
    async (nc) => {
      await nc.close();
      return "connected";
    },
    (error: Error) => error.message,
  );
}

/** "subscribed", or the error the server answered a subscription of `nc` to `subject` with (a permissions violation). */
export async function subscribeOutcome(nc: NatsConnection, subject: string): Promise<string> {
  let refusal: string | undefined;
  const sub = nc.subscribe(subject, {
    callback: (error) => {
      if (error) refusal = error.message;
    },
  });
  // The server answers SUB before the PONG of this flush, so a refusal has arrived when it resolves.
  await nc.flush();
  sub.unsubscribe();
  return refusal ?? "subscribed";
}
