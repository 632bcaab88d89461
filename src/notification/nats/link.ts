// The NATS connection as the workers see it: opened in the background so the HTTP server (liveness, readiness)
// is up while NATS is still unreachable, and awaited by each worker until it connects or shutdown begins.
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../shared/logger.ts";

export type NatsLink = {
  /** The connection, or undefined when `signal` aborted first. */
  get: (signal: AbortSignal) => Promise<NatsConnection | undefined>;
  /** True while connected (false before the first connection and during outages). */
  connected: () => boolean;
  /** Drains the connection if it was opened; a connection still being attempted is closed when it arrives. */
  close: () => Promise<void>;
};

export function createNatsLink(connecting: Promise<NatsConnection>, log: Logger): NatsLink {
  let connection: NatsConnection | undefined;
  let closing = false;
  let up = false;
  const watch = async (nc: NatsConnection) => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") up = false;
      else if (s.type === "reconnect") up = true;
    }
  };
  const ready = connecting.then(
    (nc) => {
      connection = nc;
      up = !nc.isClosed();
      void watch(nc).catch(() => {});
      if (closing) void nc.close();
      return nc;
    },
    (error) => {
      log.error({ err: error }, "NATS connection failed");
      return undefined;
    },
  );
  return {
    get: (signal) =>
      signal.aborted
        ? Promise.resolve(undefined)
        : Promise.race([
            ready,
            new Promise<undefined>((resolve) => signal.addEventListener("abort", () => resolve(undefined))),
          ]),
    connected: () => up && connection !== undefined && !connection.isClosed(),
    close: async () => {
      closing = true;
      if (!connection || connection.isClosed()) return;
      await connection.drain().catch((error) => log.warn({ err: error }, "NATS drain failed"));
    },
  };
}
