// Secrets stay secret: every log line of both apps, under valid and invalid tokens, refused and failing
// requests, a database that is gone, a failing webhook and a configuration logged by mistake, is captured through a
// pino destination and scanned for tokens, "Bearer", the webhook secret and the database and NATS passwords.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createApp } from "../../src/entitlement/app.ts";
import { loadEntitlementConfig } from "../../src/entitlement/config.ts";
import { createApp as createNotificationApp } from "../../src/notification/app.ts";
import { SECRET_VARIABLES } from "../../src/notification/config.ts";
import { createWebhookSender } from "../../src/notification/work/channels/webhook.ts";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { createLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { deliverBatch } from "../notification/delivery.helpers.ts";
import { notificationSql, seedNotification, testConfig, testMetrics } from "../notification/helpers.ts";
import { type DatabaseFixture, openTestDatabase } from "../support/infra.ts";
import { commandRequest, vectorBody } from "./api.helpers.ts";

const WRITER = "ent_Wr1terTokenThatMustNeverBeLogged";
const READER = "ent_R3aderTokenThatMustNeverBeLogged";
const WRONG = "ent_Wr0ngTokenThatMustNeverBeLogged";
const DEBUG_TOKEN = "debug-T0ken-that-must-never-be-logged";
const DB_PASSWORD = "Db-Passw0rd-never-logged";
const WEBHOOK_KEY = Buffer.from("webhook-key-that-must-not-leak!!").toString("base64");
const WEBHOOK_SECRET = `whsec_${WEBHOOK_KEY}`;
const NATS_PASSWORD = "Nats-Passw0rd-never-logged";
const FORBIDDEN = [WRITER, READER, WRONG, DEBUG_TOKEN, DB_PASSWORD, WEBHOOK_KEY, NATS_PASSWORD, "Bearer"];

let f: DatabaseFixture;
const lines: string[] = [];
// Configured as the services configure theirs: Notification hands in the names of its secret variables.
const log = createLogger({
  level: "trace",
  service: "secrets-test",
  secretKeys: SECRET_VARIABLES,
  destination: { write: (l: string) => lines.push(l) },
});
const pools: Sql[] = [];

/** The test database's URL with a password in it (PostgreSQL here trusts local connections, so it is ignored). */
function withPassword(url: string): string {
  const u = new URL(url);
  u.username = "postgres";
  u.password = DB_PASSWORD;
  return u.toString();
}
function pool(url: string, schema: string): Sql {
  const sql = createSql({ url, schema, max: 2, applicationName: "secrets-test" });
  pools.push(sql);
  return sql;
}

beforeAll(async () => {
  f = await openTestDatabase("secrets", { service: "entitlement" });
});
afterAll(async () => {
  for (const sql of pools) await sql.end({ timeout: 1 });
  await f.close();
});

async function exerciseEntitlement(): Promise<void> {
  const env = {
    DATABASE_URL: withPassword(f.db.url),
    DATABASE_MIGRATION_URL: withPassword(f.db.url),
    NATS_USER: "entitlement",
    NATS_PASSWORD,
    ENTITLEMENT_AUTH_TOKENS: `${tokenEntryLine("writer", WRITER, "write")},${tokenEntryLine("reader", READER, "read")}`,
  };
  const config = loadEntitlementConfig(env);
  log.debug({ config }, "configuration (as a careless startup line would log it)");
  const deps = {
    log,
    now: () => new Date(),
    idempotencyTtlHours: 24,
    auth: config.auth,
    registry: createRegistry("e"),
  };
  const good = createApp({ ...deps, sql: pool(config.database.url, "entitlement") });
  // A schema that does not exist: every command fails inside the database (500, logged with its error).
  const broken = createApp({
    ...deps,
    sql: pool(config.database.url, "no_such_schema"),
    registry: createRegistry("b"),
  });
  // A database that is gone, reached with a password: 503 and /readyz failures, both logged.
  const gone = createApp({
    ...deps,
    sql: pool(`postgres://app:${DB_PASSWORD}@127.0.0.1:9/x`, "entitlement"),
    registry: createRegistry("g"),
    readinessTimeoutMs: 500,
  });
  const limited = createApp({
    ...deps,
    sql: pool(config.database.url, "entitlement"),
    registry: createRegistry("l"),
    limits: { rateLimit: { ratePerSecond: 0.01, burst: 1 } },
  });
  const auth = (token: string) => ({ authorization: `Bearer ${token}` });
  const key = (k: string) => ({ "idempotency-key": k });
  for (const app of [good, broken, gone, limited]) {
    for (const headers of [auth(WRITER), auth(READER), auth(WRONG), { authorization: WRITER }, {}]) {
      await app.handle(commandRequest("grants", vectorBody, { ...key("k1"), ...headers }));
      await app.handle(commandRequest("grants", "{broken", { ...key("k2"), ...headers }));
      await app.handle(commandRequest("revokes", { ...vectorBody, user_id: "" }, { ...key("k3"), ...headers }));
      await app.handle(new Request("http://localhost/v1/users/user-1/entitlements", { headers }));
      await app.handle(new Request("http://localhost/metrics", { headers }));
    }
    await app.handle(new Request("http://localhost/readyz"));
  }
}

async function exerciseNotification(): Promise<void> {
  const config = testConfig({
    DATABASE_URL: withPassword(f.db.url),
    NOTIFICATION_DEBUG_API_ENABLED: "true",
    NOTIFICATION_DEBUG_API_TOKEN: DEBUG_TOKEN,
    NOTIFICATION_DELIVERY_CHANNEL: "webhook",
    NOTIFICATION_WEBHOOK_URL: "http://127.0.0.1:9/hook",
    NOTIFICATION_WEBHOOK_SECRET: WEBHOOK_SECRET,
    NOTIFICATION_DELIVERY_MAX_ATTEMPTS: "2",
  });
  log.debug({ config }, "configuration (as a careless startup line would log it)");
  const sql = notificationSql(withPassword(f.db.url));
  pools.push(sql);
  const app = createNotificationApp({
    sql,
    log,
    registry: testMetrics().registry,
    version: "test",
    consumerReady: undefined,
    debugApi: config.debugApi,
  } as Parameters<typeof createNotificationApp>[0]);
  for (const authorization of [`Bearer ${DEBUG_TOKEN}`, `Bearer ${WRONG}`, DEBUG_TOKEN, ""]) {
    await app.handle(new Request("http://localhost/debug/notification/inbox/u1", { headers: { authorization } }));
  }
  await seedNotification(sql, { createdAt: new Date(Date.now() - 1000) });
  const send = createWebhookSender({
    url: config.delivery.webhook.url ?? "",
    secret: WEBHOOK_SECRET,
    timeoutMs: 500,
    now: () => new Date(),
  });
  const deps = {
    sql,
    log,
    now: () => new Date(),
    metrics: testMetrics().metrics,
    send,
    workerId: "secrets-test",
    batchSize: 10,
    maxAttempts: 2,
    leaseMs: 30_000,
    errorMessageMaxLength: 1000,
    backoff: { ...config.delivery.backoff, baseMs: 0, minMs: 0, maxMs: 0 },
  };
  await deliverBatch(deps);
  await Bun.sleep(5);
  await deliverBatch(deps);
}

test("no token, Authorization header, webhook secret, database or NATS password in any log line", async () => {
  await exerciseEntitlement();
  await exerciseNotification();
  const text = lines.join("");
  if (process.env.SHOW_LOGS) console.log(text);
  expect(lines.length, "the scenario produced log lines to scan").toBeGreaterThan(5);
  for (const wanted of ["request failed", "database unavailable", "not ready", "configuration"]) {
    expect(text, `the scan covers a "${wanted}" line`).toContain(wanted);
  }
  expect(text, "a failed webhook delivery was logged").toMatch(/delivery failed|DLQ/);
  for (const secret of FORBIDDEN) expect(text.includes(secret), `"${secret}" appears in the logs`).toBe(false);
});
