// NATS connection (the @nats-io/transport-node client). The connection retries forever, first attempt included, so a
// service can start and serve while NATS is down; workers reach it through one NatsLink, which tells them whether it is
// usable right now and when it came back.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type BackoffPolicy, backoffMs } from "./backoff.ts";
import type { Logger } from "./logger.ts";
import { type NatsSecurity, natsServers } from "./nats-security.ts";
import { sleep } from "./runtime.ts";

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
  /** Credentials and TLS (see nats-security.ts); none by default. */
  security?: NatsSecurity;
};

/**
 * Between two failed first connections: 0.5 s doubling to 10 s, with jitter. The client's own retry (waitOnFirstConnect)
 * tried every 0.5 s for ever and said nothing, so a NATS that was never reachable went unnoticed in the logs.
 */
const FIRST_CONNECT_BACKOFF: BackoffPolicy = {
  baseMs: 500,
  maxMs: 10_000,
  minMs: 250,
  exponentBase: 2,
  jitterMin: 0.5,
  jitterMax: 1.5,
};

/**
 * Connects to NATS, retrying with backoff until it answers. The first failure of a run is logged (a warning), and the
 * connection with the number of failed attempts, so an outage is one line whatever its length; once connected, the
 * client reconnects by itself and each disconnect is logged once. When `signal` aborts first the promise rejects at
 * once, and a connection that arrives later is closed. Credentials never reach the log.
 */
export async function connectNats(options: NatsOptions, log: Logger, signal?: AbortSignal): Promise<NatsConnection> {
  for (let failures = 0; ; ) {
    if (signal?.aborted) throw new Error("aborted while connecting to NATS");
    try {
      const nc = await (signal ? untilAborted(connectOnce(options), signal) : connectOnce(options));
      log.info({ server: nc.getServer(), failed_attempts: failures }, "connected to NATS");
      void logStatus(nc, log);
      return nc;
    } catch (error) {
      if (signal?.aborted) throw error;
      if (++failures === 1) log.warn({ err: error }, "NATS unreachable: retrying with backoff until it answers");
      await sleep(backoffMs(FIRST_CONNECT_BACKOFF, failures), signal);
    }
  }
}

/** One attempt at each server of the list; reconnects after a first success are the client's, for ever. */
function connectOnce(options: NatsOptions): Promise<NatsConnection> {
  return connect({
    ...options.security,
    servers: natsServers(options.url),
    name: options.name,
    timeout: options.connectionTimeoutMs,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    pingInterval: 10_000,
    noAsyncTraces: options.noAsyncTraces ?? false,
  });
}

async function logStatus(nc: NatsConnection, log: Logger): Promise<void> {
  for await (const s of nc.status()) {
    if (s.type === "disconnect") log.warn({ server: s.server }, "NATS disconnected");
    else if (s.type === "reconnect") log.info({ server: s.server }, "NATS reconnected");
    else if (s.type === "error") log.warn({ err: s.error }, "NATS error");
  }
}

/** `connecting`, or a rejection as soon as `signal` aborts; a connection that arrives after the abort is closed. */
function untilAborted(connecting: Promise<NatsConnection>, signal: AbortSignal): Promise<NatsConnection> {
  const abandon = () => {
    connecting.then((nc) => nc.close()).catch(() => {});
    return new Error("aborted while connecting to NATS");
  };
  if (signal.aborted) return Promise.reject(abandon());
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abandon());
    signal.addEventListener("abort", onAbort, { once: true });
    connecting.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** The NATS connection as every worker sees it, while it is still being made and across outages. */
export type NatsLink = {
  /** The connection once it is up, or undefined when `signal` aborts (or the link is closed) first. */
  get(signal: AbortSignal): Promise<NatsConnection | undefined>;
  /** True while connected: false before the first connection, during an outage and after close. */
  connected(): boolean;
  /** Calls `listener` after every reconnect; returns a function that removes it. */
  onReconnect(listener: () => void): () => void;
  /** Stops a connection still being made and drains one that is up. */
  close(): Promise<void>;
};

/** Connects in the background (see connectNats) and returns the link at once, so HTTP serves meanwhile. */
export function openNatsLink(options: NatsOptions, log: Logger): NatsLink {
  const closing = new AbortController();
  return createNatsLink(connectNats(options, log, closing.signal), log, closing);
}

/** A link over a connection being made; `closing` is aborted by `close()` (openNatsLink hands it to connectNats). */
export function createNatsLink(
  connecting: Promise<NatsConnection>,
  log: Logger,
  closing: AbortController = new AbortController(),
): NatsLink {
  let connection: NatsConnection | undefined;
  let up = false;
  const listeners = new Set<() => void>();
  const follow = async (nc: NatsConnection) => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" || s.type === "close") up = false;
      else if (s.type === "reconnect") {
        up = true;
        for (const listener of listeners) listener();
      }
    }
  };
  const ready = connecting.then(
    (nc) => {
      connection = nc;
      up = !nc.isClosed();
      void follow(nc).catch(() => {});
      if (closing.signal.aborted) void nc.close();
      return nc;
    },
    (error) => {
      if (!closing.signal.aborted) log.error({ err: error }, "NATS connection failed");
      return undefined;
    },
  );
  return {
    get: (signal) =>
      signal.aborted || closing.signal.aborted
        ? Promise.resolve(undefined)
        : Promise.race([ready, abortOf(signal), abortOf(closing.signal)]),
    connected: () => up && connection !== undefined && !connection.isClosed(),
    onReconnect(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: async () => {
      closing.abort();
      if (!connection || connection.isClosed()) return;
      await connection.drain().catch((error) => log.warn({ err: error }, "NATS drain failed"));
    },
  };
}

const abortOf = (signal: AbortSignal) =>
  new Promise<undefined>((resolve) => signal.addEventListener("abort", () => resolve(undefined), { once: true }));
