// Shared fixtures of the Entitlement API tests: requests built for `app.handle`, an app on its own database with a
// settable clock, and row counts of the four tables a command writes.
import { afterAll, beforeAll, beforeEach } from "bun:test";
import { type AppDeps, createApp, type Limits } from "../../src/entitlement/app.ts";
import type { AuthSettings } from "../../src/shared/auth/guard.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { openTestDatabase, type TestDatabase } from "../support/infra.ts";
import { otherReplica } from "../support/wakeups.ts";

export type Body = Record<string, unknown>;

/** These tests are about the API's behaviour, not its callers: authentication is off (tests/entitlement/auth.* test it). */
export const AUTH_DISABLED: AuthSettings = { disabled: true, tokens: [], metricsPublic: false };

/** The body of the Java original's request-hash test vector. */
export const vectorBody = {
  user_id: "user-1",
  stock_keeping_unit: "sku-1",
  reason: "purchase",
  purchase_id: "purchase-1",
};

export type CommandPath = "grants" | "revokes" | "extensions" | "bundle-grants";

export function commandRequest(
  action: CommandPath,
  body: Body | string | undefined,
  headers: Record<string, string> = {},
): Request {
  return new Request(`http://localhost/v1/entitlements/${action}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}

export type App = ReturnType<typeof createApp>;

export type Reply = { status: number; contentType: string | null; text: string; json: Body };

export async function send(app: App, request: Request): Promise<Reply> {
  const response = await app.handle(request);
  const text = await response.text();
  let json: Body = {};
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: response.status, contentType: response.headers.get("content-type"), text, json };
}

export type ApiFixture = {
  db: TestDatabase;
  sql: Sql;
  app: App;
  registry: ReturnType<typeof createRegistry>;
  /** The app's clock; undefined means the real time. */
  clock: { at: Date | undefined };
  /** Empties Entitlement's tables (resetService): what a file calls before each test. */
  reset: () => Promise<void>;
  close: () => Promise<void>;
};

/** The app on `sql` as the tests build it: no authentication, the real clock, a day's keys; `deps` adds or overrides. */
export function appOn(sql: Sql, deps: Partial<AppDeps> = {}): App {
  return createApp({
    sql,
    log: silentLogger,
    now: () => new Date(),
    idempotencyTtlHours: 24,
    auth: AUTH_DISABLED,
    ...deps,
  });
}

/** The app on a database of its own (openTestDatabase); `close` ends both. */
export async function openApi(
  label: string,
  options: { statementTimeoutMs?: number; limits?: Limits } = {},
): Promise<ApiFixture> {
  const { db, sql, reset, close } = await openTestDatabase(label, { service: "entitlement" });
  const registry = createRegistry("entitlement");
  const clock: { at: Date | undefined } = { at: undefined };
  const app = createApp({
    sql,
    log: silentLogger,
    now: () => clock.at ?? new Date(),
    idempotencyTtlHours: 24,
    auth: AUTH_DISABLED,
    registry,
    // The app under test announces its commits as a replica does, so the relays and schedulers of a test hear them.
    onCommitted: (work) => otherReplica(sql).committed(work),
    ...options,
  });
  return {
    db,
    sql,
    app,
    registry,
    clock,
    reset,
    close,
  };
}

/**
 * The hooks of a test file of the API: openApi before its tests, closed after them; with `resetEach`, the tables are
 * emptied and the clock is the real time again before each test. Read `f`'s fields inside tests and hooks: they are
 * set once the file's tests start.
 */
export function useApi(
  label: string,
  options: { statementTimeoutMs?: number; limits?: Limits; resetEach?: boolean } = {},
): ApiFixture {
  const { resetEach, ...appOptions } = options;
  const f = {} as ApiFixture;
  // The first file after a migration changed builds the template before its clone.
  beforeAll(async () => {
    Object.assign(f, await openApi(label, appOptions));
  }, 60_000);
  afterAll(() => f.close?.());
  if (resetEach) {
    beforeEach(async () => {
      f.clock.at = undefined;
      await f.reset();
    });
  }
  return f;
}

export type Counts = { entitlements: number; audit: number; outbox: number; idempotency: number };

export async function countRows(sql: Sql): Promise<Counts> {
  const [row] = await sql<Counts[]>`
    select (select count(*)::int from entitlements) as entitlements,
           (select count(*)::int from entitlement_audit) as audit,
           (select count(*)::int from outbox_events) as outbox,
           (select count(*)::int from idempotency_keys) as idempotency`;
  if (!row) throw new Error("count query returned nothing");
  return row;
}

/** The value of entitlement_command_total for one label set (0 when never counted). */
export async function commandCount(registry: ReturnType<typeof createRegistry>, action: string, result: string) {
  const metric = await registry.getSingleMetric("entitlement_command_total")?.get();
  return metric?.values.find((v) => v.labels.action === action && v.labels.result === result)?.value ?? 0;
}
