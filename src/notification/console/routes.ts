// /console on Notification (NOTIFICATION_CONSOLE_ENABLED): the shared console skeleton with this service's pages.
// Signing in takes NOTIFICATION_DEBUG_API_TOKEN, checked as the debug inbox checks it (edge/debug-token.ts); the form
// says so, since this service has no API tokens of its own.
import type { ConsoleSettings } from "../../shared/console/config.ts";
import { serviceConsole } from "../../shared/console/kit.ts";
import type { Sql } from "../../shared/db.ts";
import { createRateLimiter } from "../../shared/http/rate-limit.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Clock } from "../../shared/runtime.ts";
import { requireBearer } from "../edge/debug-token.ts";
import { endpointActions, endpointPages } from "./endpoint-pages.ts";
import { notificationActions, notificationPages, type Operator } from "./pages.ts";

/** Notification has no API rate limit of its own; the operator's console requests get this one. */
const CONSOLE_RATE = { ratePerSecond: 20, burst: 60 };
const OPERATOR: Operator = { name: "debug" };

export function notificationConsole(deps: {
  sql: Sql;
  log: Logger;
  settings: ConsoleSettings;
  token: string | undefined;
  now?: () => number;
  /** The webhook endpoints' pages; their replay is the admin API's. */
  endpoints?: { now: Clock; allowPrivate: boolean; onDue?: () => void };
}) {
  const endpoints = deps.endpoints ?? { now: () => new Date(), allowPrivate: false };
  const limiter = createRateLimiter(CONSOLE_RATE, () => performance.now());
  return serviceConsole<Operator>(
    {
      service: "notification",
      title: "Notification",
      nav: [
        { href: "/console/users", label: "Users" },
        { href: "/console/dlq", label: "DLQ" },
        { href: "/console/endpoints", label: "Endpoints" },
      ],
      settings: deps.settings,
      now: deps.now,
      tokenLabel: "Debug token (NOTIFICATION_DEBUG_API_TOKEN)",
      signIn: (token) => {
        // Without a configured token requireBearer lets everything through; the console never does.
        if (!deps.token) return undefined;
        try {
          requireBearer(`Bearer ${token}`, deps.token);
          return OPERATOR;
        } catch {
          return undefined;
        }
      },
      nameOf: (operator) => operator.name,
      limit: (name) => limiter.take(name),
      log: deps.log,
    },
    {
      pages: { ...notificationPages(deps.sql), ...endpointPages(deps.sql) },
      actions: { ...notificationActions(deps.sql, deps.log), ...endpointActions(deps.sql, deps.log, endpoints) },
    },
  );
}
