// NATS connection (the @nats-io/transport-node client). The connection retries forever, first attempt included, so a
// service can start and serve while NATS is down; callers watch `status()` and `isClosed()` instead of failing.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "./logger.ts";

export type { NatsConnection };

export type NatsOptions = {
  url: string;
  connectionTimeoutMs: number;
  name: string;
  /**
   * Skips the two Errors (with their stack) the client builds for every request only to enrich a timeout's trace; the
   * error's message stays the same. For a process whose requests are JetStream publishes by the thousand.
   */
  noAsyncTraces?: boolean;
};

/**
 * Connects to NATS, retrying until it answers (or `signal` aborts). Logs each state change once, without credentials.
 */
export async function connectNats(options: NatsOptions, log: Logger, signal?: AbortSignal): Promise<NatsConnection> {
  const nc = await connect({
    servers: options.url.split(",").map((s) => s.trim()),
    name: options.name,
    timeout: options.connectionTimeoutMs,
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    pingInterval: 10_000,
    noAsyncTraces: options.noAsyncTraces ?? false,
  });
  if (signal?.aborted) {
    await nc.close();
    throw new Error("aborted while connecting to NATS");
  }
  log.info({ server: nc.getServer() }, "connected to NATS");
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") log.warn({ server: s.server }, "NATS disconnected");
      else if (s.type === "reconnect") log.info({ server: s.server }, "NATS reconnected");
      else if (s.type === "error") log.warn({ err: s.error }, "NATS error");
    }
  })();
  return nc;
}

/** Whether a connection is usable right now, for workers that must not act while NATS is away. */
export type NatsLink = {
  connected(): boolean;
  /** Calls `listener` after every reconnect; returns a function that removes it. */
  onReconnect(listener: () => void): () => void;
};

/**
 * Follows the connection's status events. Starts as connected (call it on a connection `connectNats` returned);
 * a disconnect or close makes it false until the next reconnect.
 */
export function watchNatsLink(nc: NatsConnection): NatsLink {
  let up = !nc.isClosed();
  const listeners = new Set<() => void>();
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" || s.type === "close") up = false;
      else if (s.type === "reconnect") {
        up = true;
        for (const listener of listeners) listener();
      }
    }
  })();
  return {
    connected: () => up && !nc.isClosed(),
    onReconnect(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
