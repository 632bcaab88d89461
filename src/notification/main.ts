// Composition root of the Notification executable: the only place that reads process.env, opens
// PostgreSQL and NATS, listens and starts the loops.
import { readFileSync } from "node:fs";
import type { Registry } from "prom-client";
import pkg from "../../package.json" with { type: "json" };
import { buildInfo, versionLine } from "../shared/build-info.ts";
import { dispatch, type Subcommand } from "../shared/cli.ts";
import type { Sql } from "../shared/db.ts";
import type { Logger } from "../shared/logger.ts";
import { natsConnectedMetric } from "../shared/metrics.ts";
import { openNatsLink } from "../shared/nats.ts";
import { systemClock, Waker, workerId } from "../shared/runtime.ts";
import { lifecycleSubcommands, type ServiceSpec } from "../shared/service.ts";
import { createApp } from "./app.ts";
import { loadNotificationConfig, type NotificationConfig, SECRET_VARIABLES } from "./config.ts";
import { createSecretBox } from "./features/endpoints/secrets.ts";
import { createPlayers, type Players } from "./features/players/setup.ts";
import type { PushRouteDeps } from "./features/push/routes.ts";
import type { SendDeps } from "./features/send/service.ts";
import { allBound, type ConsumerHealth } from "./intake/consumer/worker.ts";
import { eventPipelines } from "./intake/handlers/registry.ts";
import { createNotificationMetrics, type NotificationMetrics } from "./metrics.ts";
import { SCHEMA, schemaText } from "./migrations.ts";
import { notificationOpsSubcommands } from "./ops/subcommands.ts";
import { createWorkers } from "./workers.ts";

/** The admin API's dependencies, when it has tokens (the configuration then guarantees the key). */
function endpointAdmin(config: NotificationConfig, sql: Sql, waker: Waker) {
  const { tokens, secretKey, previousSecretKeys, allowPrivate } = config.endpoints;
  if (tokens.length === 0 || !secretKey) return undefined;
  const box = createSecretBox(secretKey, previousSecretKeys);
  return { tokens, service: { sql, now: systemClock, box, allowPrivate, onDue: () => waker.wake() } };
}

/** The send API's dependencies: after each commit it wakes what a consumed batch wakes. */
function sendDeps(sql: Sql, players: Players, metrics: NotificationMetrics, wakers: Waker[]): SendDeps {
  return {
    sql,
    now: systemClock,
    stored: players.stored,
    onCreated: () => {
      for (const waker of wakers) waker.wake();
    },
    onStoredCount: (count) => metrics.notificationsCreated.inc({ source: "api" }, count),
  };
}

/** The devices and preferences routes, beside the players' (the same token); a platform is on when configured. */
function pushRouteDeps(config: NotificationConfig, sql: Sql, players: Players): PushRouteDeps | undefined {
  const routes = players.routes;
  if (!routes) return undefined;
  const configured = { webpush: config.push.vapid !== undefined, fcm: config.push.fcmServiceAccountFile !== undefined };
  return {
    sql,
    now: systemClock,
    configured,
    allowPrivate: config.endpoints.allowPrivate,
    authenticate: routes.authenticate,
  };
}

/** The open files this process may hold (its soft limit, which Bun raises to the hard one); undefined off Linux. */
function openFileLimit(): number | undefined {
  try {
    const limit = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1];
    return limit === undefined ? undefined : Number(limit);
  } catch {
    return undefined;
  }
}

/** NATS connects in the background (retrying forever): /healthz and /readyz answer while NATS is down. */
function openLink(config: NotificationConfig, log: Logger, registry: Registry) {
  const link = config.nats.enabled
    ? openNatsLink(
        {
          url: config.nats.url,
          connectionTimeoutMs: config.nats.connectionTimeoutMs,
          security: config.nats.security,
          name: "notification",
        },
        log.child({ component: "nats" }),
      )
    : undefined;
  if (!link) log.warn("NATS_ENABLED=false: no events are consumed");
  else natsConnectedMetric(registry, link.connected);
  return link;
}

const spec: ServiceSpec<NotificationConfig> = {
  name: "notification",
  schema: SCHEMA,
  schemaText,
  loadConfig: loadNotificationConfig,
  secretKeys: SECRET_VARIABLES,
  version: pkg.version,
  start: async ({ config, sql, log, registry, tracing }) => {
    const metrics = createNotificationMetrics(registry);
    const health: ConsumerHealth = { bound: {} };
    const sources = eventPipelines(config.nats).map((p) => p.handler.source);
    const link = openLink(config, log, registry);
    const id = workerId(config.workerId);
    const openFiles = openFileLimit();
    const players = createPlayers({ config, sql, log, registry, now: systemClock, link, openFiles });
    const [endpointWaker, deliveryWaker, pushWaker] = [new Waker(), new Waker(), new Waker()];
    const workers = createWorkers({
      endpointWaker,
      pushWaker,
      config,
      sql,
      log,
      now: systemClock,
      metrics,
      waker: deliveryWaker,
      workerId: id,
      link,
      health,
      players,
    });
    const app = createApp({
      sql,
      log,
      registry,
      version: pkg.version,
      consumerReady: link ? () => allBound(health, sources) && link.connected() : undefined,
      debugApi: config.debugApi,
      console: config.console,
      players: players.routes,
      push: pushRouteDeps(config, sql, players),
      endpoints: endpointAdmin(config, sql, endpointWaker),
      send: sendDeps(sql, players, metrics, [deliveryWaker, endpointWaker, pushWaker]),
    });
    const close = async () => {
      await link?.close();
      await tracing.shutdown();
    };
    // Live streams never end by themselves: they are closed before the server stops taking requests.
    return { app, workers, close, beforeStop: () => players.hub.closeAll("shutdown") };
  },
};

const env = process.env;
const subcommands: Subcommand[] = [...lifecycleSubcommands(spec, env), ...notificationOpsSubcommands(env)];

process.exitCode = await dispatch(
  "notification",
  process.argv.slice(2),
  subcommands,
  versionLine(buildInfo("notification", pkg.version)),
);
