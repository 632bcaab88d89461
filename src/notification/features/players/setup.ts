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
import type { PlayerSettings } from "./config.ts";
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
}): Players {
  const { sql, registry } = deps;
  const settings = deps.config.players;
  const log = deps.log.child({ component: "players" });
  const metrics = createPlayerMetrics(registry);
  const hub = createStreamHub({ sql, log, metrics, settings: settings.stream });
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
