// The Entitlement HTTP application, built from its dependencies. main.ts and the tests share it.
// Every request passes the edge in this order: header limits, authentication and scope (docs/security.md), the caller's
// rate limit; only then are its headers and body validated, and only then does it wait for a database slot.
import type { Registry } from "prom-client";
import {
  type AuthSettings,
  authenticate,
  type Caller,
  callerName,
  createRouteCheck,
  type EdgeDecision,
  requiredAccess,
} from "../shared/auth/guard.ts";
import { createRefusalReporter } from "../shared/auth/refusal.ts";
import { ping } from "../shared/db.ts";
import { createHttpApp } from "../shared/http/app.ts";
import { ApiError } from "../shared/http/errors.ts";
import { requestPath } from "../shared/http/path.ts";
import { createRateLimiter, type RateLimitSettings } from "../shared/http/rate-limit.ts";
import { createRegistry } from "../shared/metrics.ts";
import { createReadiness } from "../shared/readiness.ts";
import type { Handles } from "../shared/runtime.ts";
import { type EntitlementConsoleSettings, entitlementConsole } from "./console/routes.ts";
import { ENTITLEMENT_API } from "./edge/api-doc.ts";
import { createGate } from "./edge/limits/gate.ts";
import { checkHeaderLimits } from "./edge/limits/headers.ts";
import { createUnavailableReporter } from "./edge/route-deps.ts";
import { bundleRoutes } from "./features/bundles/routes.ts";
import type { CommittedWork } from "./features/commands/committed.ts";
import { createCommandMetrics } from "./features/commands/metrics.ts";
import type { RouteDeps } from "./features/commands/run.ts";
import { entitlementRoutes } from "./features/entitlements/routes.ts";
import { extensionRoutes } from "./features/extensions/routes.ts";
import { historyRoutes } from "./features/history/routes.ts";
import { pointsRoutes } from "./features/points/routes.ts";

export type Limits = {
  /** false: no rate limit (ENTITLEMENT_RATE_LIMIT_ENABLED=false). Default 1000/s, burst 2000. */
  rateLimit?: RateLimitSettings | false;
  /** Default 10s. */
  requestTimeoutMs?: number;
  /** Default 1s. */
  queueTimeoutMs?: number;
  /** Requests that may use the database at once: the pool size (default 10). */
  slots?: number;
  /** Requests that may wait for a slot (default 1,000); beyond it 503 at once. */
  maxQueue?: number;
};

/**
 * A waiting request holds no database connection, only its parsed body, and the queue timeout bounds its wait, so the
 * bound is generous: at `slots * 4` (40 with the default pool) a burst of 64 connections got 503s at once while the
 * pool would have served them within milliseconds.
 */
const DEFAULT_MAX_QUEUE = 1_000;

export type AppDeps = Handles & {
  idempotencyTtlHours: number;
  /** Required, so that every caller of createApp decides about authentication (its `jwt` too, main.ts builds it). */
  auth: AuthSettings;
  limits?: Limits;
  /** Monotonic milliseconds for the rate limiter (default performance.now). */
  monotonicNow?: () => number;
  /** Upper bound of each statement of a command, lock waits included (default 5s). */
  statementTimeoutMs?: number;
  /** How long /readyz waits for `select 1` (default 2s). */
  readinessTimeoutMs?: number;
  registry?: Registry;
  version?: string;
  /** The support console at /console; absent or disabled: not served. */
  console?: EntitlementConsoleSettings;
  /** Told after each command that committed work for the workers (work/wakeups.ts); main wires it. */
  onCommitted?: (work: CommittedWork) => void;
};

/** The console signs its users in itself (console/routes.ts); its paths skip the bearer check of the API. */
const isConsolePath = (path: string) => path === "/console" || path.startsWith("/console/");

/** A console path may reach only console routes, which check their own session. */
const CONSOLE: EdgeDecision = { access: "open", route: undefined, under: "/console" };

/** The prefix of the authentication metrics: entitlement_auth_refusals_total, entitlement_auth_jwks_*. */
export const AUTH_METRICS = "entitlement_auth";

export function createApp(deps: AppDeps) {
  const registry = deps.registry ?? createRegistry("entitlement");
  const { requestTimeoutMs, limiter, gate } = requestLimits(deps);
  const callers = new WeakMap<Request, Caller>();
  const routeCheck = createRouteCheck(() => app.routes, deps.log, "every route");
  const onRefusal = createRefusalReporter({ registry, metricPrefix: AUTH_METRICS, log: deps.log });
  const auth: AuthSettings = { ...deps.auth, onRefusal };
  const readiness = createReadiness(() => ping(deps.sql), { timeoutMs: deps.readinessTimeoutMs });
  const routeDeps: RouteDeps = {
    ...commandDeps(deps, registry),
    callerOf: (request) => callerName(callers.get(request)),
    gate,
    onUnavailable: createUnavailableReporter({ log: deps.log, report: readiness.reportUnavailable }),
  };

  const app = createHttpApp({
    service: "entitlement",
    version: deps.version ?? "0.0.0",
    log: deps.log,
    registry,
    documentation: ENTITLEMENT_API,
    readiness: readiness.check,
    serve: {
      // Seconds a connection may stay silent; also ends a client that stops sending its body halfway.
      idleTimeout: Math.min(255, Math.ceil(requestTimeoutMs / 1000) + 1),
    },
  })
    .onRequest(async ({ request }) => {
      checkHeaderLimits(request.headers);
      const path = requestPath(request);
      if (deps.console?.enabled && isConsolePath(path)) return routeCheck.decide(request, CONSOLE);
      const decision = requiredAccess(routeCheck.scopes(), request.method, path, auth.metricsPublic);
      routeCheck.decide(request, decision);
      const caller = await authenticate(auth, decision.access, request.headers.get("authorization"));
      if (!caller) return;
      callers.set(request, caller);
      const wait = limiter?.take(caller.name);
      if (wait !== undefined) {
        throw new ApiError(429, "RATE_LIMITED", "rate limit exceeded, retry later", { "retry-after": String(wait) });
      }
    })
    .onBeforeHandle({ as: "global" }, ({ request, route }) => routeCheck.check(request, route))
    .use(entitlementRoutes(routeDeps))
    .use(historyRoutes(routeDeps))
    .use(bundleRoutes(routeDeps))
    .use(extensionRoutes(routeDeps))
    .use(pointsRoutes(routeDeps));
  if (deps.console?.enabled) {
    app.use(entitlementConsole(routeDeps, { settings: deps.console, auth, limiter }));
  }
  return app;
}

/** The caller's rate limiter and the database gate, with their defaults. */
function requestLimits(deps: Pick<AppDeps, "limits" | "monotonicNow">) {
  const limits = deps.limits ?? {};
  const requestTimeoutMs = limits.requestTimeoutMs ?? 10_000;
  const rateLimit = limits.rateLimit ?? { ratePerSecond: 1000, burst: 2000 };
  const limiter = rateLimit ? createRateLimiter(rateLimit, deps.monotonicNow ?? (() => performance.now())) : undefined;
  const gate = createGate({
    slots: limits.slots ?? 10,
    maxQueue: limits.maxQueue ?? DEFAULT_MAX_QUEUE,
    queueTimeoutMs: limits.queueTimeoutMs ?? 1_000,
    requestTimeoutMs,
  });
  return { requestTimeoutMs, limiter, gate };
}

/** What every command runs with (write/run.ts CommandDeps), with its defaults. */
function commandDeps(deps: AppDeps, registry: Registry) {
  return {
    sql: deps.sql,
    log: deps.log,
    now: deps.now,
    idempotencyTtlMs: deps.idempotencyTtlHours * 3_600_000,
    statementTimeoutMs: deps.statementTimeoutMs ?? 5_000,
    metrics: createCommandMetrics(registry),
    onCommitted: deps.onCommitted,
  };
}
