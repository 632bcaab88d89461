// The Notification HTTP app, shared by main and the tests: health, readiness (database and JetStream consumer),
// metrics, OpenAPI, the debug inbox when enabled, and the webhook endpoints admin API when it has tokens.
import type { Registry } from "prom-client";
import type { AuthSettings, Caller } from "../shared/auth/guard.ts";
import { createRefusalReporter } from "../shared/auth/refusal.ts";
import type { TokenEntry } from "../shared/auth/tokens.ts";
import type { ConsoleSettings } from "../shared/console/config.ts";
import { ping, type Sql } from "../shared/db.ts";
import { createHttpApp } from "../shared/http/app.ts";
import type { ApiDocumentation } from "../shared/http/openapi.ts";
import type { Logger } from "../shared/logger.ts";
import { createReadiness } from "../shared/readiness.ts";
import { notificationConsole } from "./console/routes.ts";
import { guardAdminRoutes } from "./edge/admin-auth.ts";
import { allowPlayerOrigins } from "./edge/player-cors.ts";
import { inboxRoutes } from "./features/debug-inbox/routes.ts";
import { endpointRoutes } from "./features/endpoints/routes.ts";
import type { EndpointServiceDeps } from "./features/endpoints/service.ts";
import { PLAYER_API_OPERATIONS, type PlayerRouteDeps, playerRoutes } from "./features/players/routes.ts";
import { type PushRouteDeps, pushRoutes } from "./features/push/routes.ts";
import { MAX_SEND_BODY_BYTES, SEND_PATH } from "./features/send/model.ts";
import { sendRoutes } from "./features/send/routes.ts";
import type { SendDeps } from "./features/send/service.ts";

const NOTIFICATION_API: ApiDocumentation = {
  description: [
    "Notification consumes entitlement and matchmaking events from NATS JetStream and delivers them; its HTTP side is for the",
    "platform (probes, metrics), the webhook endpoints admin API when NOTIFICATION_AUTH_TOKENS is set (404",
    "otherwise) and, when NOTIFICATION_DEBUG_API_ENABLED=true, a debug inbox (404 otherwise).",
    "Players read their own notifications under /v1/me/ with their OpenID Connect access token, when",
    "NOTIFICATION_PLAYER_JWT_ISSUER is set (404 otherwise).",
  ].join(" "),
  bearerSchemes: {
    debugToken: "NOTIFICATION_DEBUG_API_TOKEN (at least 16 characters, required when the debug API is on).",
    adminToken: "One of NOTIFICATION_AUTH_TOKENS: read for GET, write for the rest, notify to send notifications.",
    playerToken:
      "A player's access token (a JWT) from NOTIFICATION_PLAYER_JWT_ISSUER for NOTIFICATION_PLAYER_JWT_AUDIENCE; " +
      "its NOTIFICATION_PLAYER_JWT_USER_CLAIM (sub) is the user_id.",
  },
  security: [],
  tags: [
    { name: "debug", description: "For tests and troubleshooting; off by default." },
    { name: "operations", description: "Probes and metrics for the platform that runs the service." },
    { name: "webhook endpoints", description: "Receivers of the notifications, their secrets, attempts and replays." },
    { name: "players", description: "A player's own inbox and live stream." },
    { name: "notifications", description: "Any game server sends its own notifications to players." },
  ],
  refinements: { operations: PLAYER_API_OPERATIONS },
};

export type AppDeps = {
  sql: Sql;
  log: Logger;
  registry: Registry;
  version: string;
  /** Whether every JetStream event consumer is bound; undefined when NATS is disabled (then only the database counts). */
  consumerReady: (() => boolean) | undefined;
  debugApi: { enabled: boolean; token: string | undefined };
  /** How long /readyz waits for `select 1` (default 2s). */
  readinessTimeoutMs?: number;
  /** The support console at /console (signed in with the debug token); absent or disabled: not served. */
  console?: ConsoleSettings;
  /** The endpoints admin API: served when it has tokens (NOTIFICATION_AUTH_TOKENS). */
  endpoints?: { tokens: readonly TokenEntry[]; service: EndpointServiceDeps };
  /** The send API (POST /v1/notifications), served with the admin API, to tokens with the notify scope. */
  send?: SendDeps;
  /** The players' routes; absent (no issuer configured): /v1/me/ answers 404. */
  players?: PlayerRouteDeps;
  /** A player's devices and push preferences; absent with the players' routes. */
  push?: PushRouteDeps;
};

export function createApp(deps: AppDeps) {
  // The database's answer is cached (a flood of /readyz costs at most one probe a second) and bounded in time; the
  // consumer's state is read on every call, it costs nothing.
  const database = createReadiness(() => ping(deps.sql), { timeoutMs: deps.readinessTimeoutMs });
  const app = createHttpApp({
    service: "notification",
    version: deps.version,
    log: deps.log,
    registry: deps.registry,
    documentation: NOTIFICATION_API,
    readiness: async () => {
      await database.check();
      if (deps.consumerReady && !deps.consumerReady()) throw new Error("a JetStream event consumer is not bound");
    },
  });
  const endpoints = deps.endpoints;
  if (endpoints && endpoints.tokens.length > 0) {
    const onRefusal = createRefusalReporter({
      registry: deps.registry,
      metricPrefix: "notification_auth",
      log: deps.log,
    });
    const settings: AuthSettings = { disabled: false, tokens: endpoints.tokens, metricsPublic: true, onRefusal };
    const callers = new WeakMap<Request, Caller>();
    const bodyLimits = { [SEND_PATH]: MAX_SEND_BODY_BYTES };
    guardAdminRoutes(app, settings, deps.log, { bodyLimits, callers }).use(endpointRoutes(endpoints.service));
    const send = deps.send;
    if (send) app.use(sendRoutes({ ...send, callerOf: (request) => callers.get(request)?.name ?? "" }));
  }
  if (deps.console?.enabled) {
    const service = deps.endpoints?.service;
    const endpoints = service && { now: service.now, allowPrivate: service.allowPrivate, onDue: service.onDue };
    app.use(
      notificationConsole({
        sql: deps.sql,
        log: deps.log,
        settings: deps.console,
        token: deps.debugApi.token,
        endpoints,
      }),
    );
  }
  if (deps.players) allowPlayerOrigins(app, deps.players.corsOrigins ?? []).use(playerRoutes(deps.players));
  if (deps.push) app.use(pushRoutes(deps.push));
  return deps.debugApi.enabled ? app.use(inboxRoutes({ sql: deps.sql, token: deps.debugApi.token })) : app;
}
