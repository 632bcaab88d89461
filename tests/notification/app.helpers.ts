// The Notification app as its tests build it, beside Entitlement's openApi (tests/entitlement/api.helpers.ts): what
// every test shares (silent logs, a registry of its own, no consumer to wait for, the debug inbox off), and what a
// test is about given on top.
import { type AppDeps, createApp } from "../../src/notification/app.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { testMetrics } from "./helpers.ts";

export type NotificationApp = ReturnType<typeof createApp>;

/** createApp on `sql` with the tests' defaults; `deps` replaces any of them. */
export function notificationApp(sql: Sql, deps: Partial<AppDeps> = {}): NotificationApp {
  return createApp({
    sql,
    log: silentLogger,
    registry: testMetrics().registry,
    version: "test",
    consumerReady: undefined,
    debugApi: { enabled: false, token: undefined },
    ...deps,
  });
}
