// A private nats-server (tools/infra/nats.ts: JetStream, its own store folder, a free port) for tests that stop and
// restart the broker: the shared NATS at NATS_URL is never touched. `natsServerBinary` is undefined when nats-server is
// not installed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConnectionOptions, connect, type NatsConnection } from "@nats-io/transport-node";
import { type NatsServer, natsServer } from "../../tools/infra/nats.ts";

export { natsServerBinary } from "../../tools/infra/nats.ts";

export type PrivateNats = Pick<NatsServer, "url" | "port" | "running" | "start" | "stop"> & {
  /** Stops the server and removes its store. */
  dispose: () => Promise<void>;
};

/**
 * `args` are extra nats-server flags (`--user`, `--pass`, `--tls`, ...); `scheme` is the URL's (`tls` for a server
 * that requires TLS). Not started until `start()`.
 */
export function privateNats(label: string, options: { args?: string[]; scheme?: "nats" | "tls" } = {}): PrivateNats {
  const store = mkdtempSync(join(tmpdir(), `${label}-nats-`));
  const server = natsServer({ store, ...options });
  return {
    url: server.url,
    port: server.port,
    running: server.running,
    start: server.start,
    stop: server.stop,
    dispose: async () => {
      await server.stop("SIGKILL");
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
