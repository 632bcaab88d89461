// The Entitlement HTTP application, built from its dependencies. main.ts and the tests share it.
import type { Registry } from "prom-client";
import { ping, type Sql } from "../shared/db.ts";
import { createHttpApp } from "../shared/http/app.ts";
import type { Logger } from "../shared/logger.ts";
import { createRegistry } from "../shared/metrics.ts";
import type { Clock } from "../shared/runtime.ts";
import { createCommandMetrics } from "./entitlements/metrics.ts";
import { entitlementRoutes } from "./entitlements/routes.ts";

export type AppDeps = {
  sql: Sql;
  log: Logger;
  now: Clock;
  idempotencyTtlHours: number;
  /** Upper bound of each statement of a command, lock waits included (default 5s). */
  statementTimeoutMs?: number;
  /** How long /readyz waits for `select 1` (default 2s). */
  readinessTimeoutMs?: number;
  registry?: Registry;
  version?: string;
};

export function createApp(deps: AppDeps) {
  const registry = deps.registry ?? createRegistry("entitlement");
  const readinessTimeoutMs = deps.readinessTimeoutMs ?? 2_000;
  return createHttpApp({
    service: "entitlement",
    version: deps.version ?? "0.0.0",
    log: deps.log,
    registry,
    readiness: () => withTimeout(ping(deps.sql), readinessTimeoutMs, "database did not answer"),
  }).use(
    entitlementRoutes({
      sql: deps.sql,
      log: deps.log,
      now: deps.now,
      idempotencyTtlMs: deps.idempotencyTtlHours * 3_600_000,
      statementTimeoutMs: deps.statementTimeoutMs ?? 5_000,
      metrics: createCommandMetrics(registry),
    }),
  );
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} within ${ms}ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
