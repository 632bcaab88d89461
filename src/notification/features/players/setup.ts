// Everything the players' side needs, built once from the configuration by main (and by tests): the authenticator
// (when an issuer is configured), the hub of live streams, the fan-out between replicas, and what the consumer calls
// after each commit.
import type { Registry } from "prom-client";
import { createKeySource } from "../../../shared/auth/jwks.ts";
import { createRefusalReporter } from "../../../shared/auth/refusal.ts";
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { NatsLink } from "../../../shared/nats.ts";
import { type Clock, type Worker, workerId } from "../../../shared/runtime.ts";
import { createPlayerAuthenticator } from "../../edge/player-auth.ts";
import type { PlayerSettings, StreamSettings } from "./config.ts";
import { createPlayerFanout } from "./fanout.ts";
import { createStreamHub, type StreamHub } from "./hub.ts";
import { createPlayerMetrics } from "./metrics.ts";
import type { PlayerRouteDeps } from "./routes.ts";

export type Players = {
  /** Undefined without an issuer: the /v1/me/ routes are not mounted. */
  routes: PlayerRouteDeps | undefined;
  hub: StreamHub;
  /** After a commit that stored notifications for these users: wake this process's streams, tell the other replicas. */
  stored: (userIds: string[]) => void;
  workers: Worker[];
};

/**
 * Descriptors the process keeps for everything but its streams: the database pool, NATS, the deliveries' outbound
 * connections, the listener, logs. Each live stream holds one more, its connection.
 */
const RESERVED_FILES = 1_000;

/**
 * The stream settings with NOTIFICATION_STREAM_MAX lowered, when it must be, to what the process's open-file limit
 * (`openFiles`, undefined when unknown) leaves for streams: past it a stream's connection could not be accepted and,
 * worse, a new database or NATS connection could not be opened. Warns once when it lowers it.
 */
export function streamsWithinOpenFiles(
  stream: StreamSettings,
  openFiles: number | undefined,
  log: Logger,
): StreamSettings {
  if (openFiles === undefined || stream.max <= openFiles - RESERVED_FILES) return stream;
  const max = Math.max(1, openFiles - RESERVED_FILES);
  log.warn(
    { configured: stream.max, open_files: openFiles, max },
    "NOTIFICATION_STREAM_MAX is more than the open-file limit leaves for streams (raise ulimit -n); holding fewer",
  );
  return { ...stream, max };
}

export function createPlayers(deps: {
  /** The players' settings, and the worker id that (with a random suffix) is the origin of this process's signals. */
  config: { players: PlayerSettings; workerId: string | undefined };
  sql: Sql;
  log: Logger;
  registry: Registry;
  now: Clock;
  link: NatsLink | undefined;
  /** Tests: drop outgoing signals. */
  dropSignals?: () => boolean;
  /** The process's open-file limit (undefined: unknown), which bounds the streams it can hold. */
  openFiles?: number;
}): Players {
  const { sql, registry } = deps;
  const settings = deps.config.players;
  const log = deps.log.child({ component: "players" });
  const metrics = createPlayerMetrics(registry);
  const stream = streamsWithinOpenFiles(settings.stream, deps.openFiles, log);
  const hub = createStreamHub({ sql, log, metrics, settings: stream });
  const fanout =
    deps.link &&
    createPlayerFanout({
      link: deps.link,
      subject: settings.subject,
      origin: `${workerId(deps.config.workerId)}-${crypto.randomUUID()}`,
      log,
      metrics,
      deliver: hub.signal,
      recheck: hub.recheck,
      dropOutgoing: deps.dropSignals,
    });
  const jwt = settings.jwt;
  let routes: PlayerRouteDeps | undefined;
  if (jwt) {
    const keys = createKeySource(jwt, { registry, metricPrefix: "notification_player_auth", log });
    // Fetched at once (not awaited), so the first player does not wait for the keys.
    void keys.refresh();
    const onRefusal = createRefusalReporter({ registry, metricPrefix: "notification_player_auth", log });
    const authenticate = createPlayerAuthenticator(jwt, keys, onRefusal);
    routes = { sql, now: deps.now, authenticate, hub, corsOrigins: settings.corsOrigins };
  }
  return {
    routes,
    hub,
    stored: (userIds) => {
      hub.signal(userIds);
      fanout?.publish(userIds);
    },
    workers: [hub.worker, ...(fanout ? [fanout.worker] : [])],
  };
}
