// JWT access tokens from a real OpenID Connect provider (tests/support/idp.ts), through the real app on its own
// database: a client-credentials token grants end to end, the audit names its client, static tokens keep working
// beside it, keys rotate at the provider, and the provider's outage costs nothing while its keys are at hand.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createApp } from "../../src/entitlement/app.ts";
import type { AuthSettings } from "../../src/shared/auth/guard.ts";
import { createKeySource } from "../../src/shared/auth/jwks.ts";
import { createJwtAuthenticator } from "../../src/shared/auth/jwt.ts";
import type { JwtSettings } from "../../src/shared/auth/jwt-config.ts";
import { parseTokenEntries, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { CLIENTS, IDP_AUDIENCE, startTestIdp, type TestIdp } from "../support/idp.ts";
import { type ApiFixture, commandRequest, countRows, openApi, send } from "./api.helpers.ts";

const STATIC = "ent_static-writer";
let f: ApiFixture;
let idp: TestIdp;

/** An app that accepts the provider's tokens and one static token; the key source runs on a clock the test moves. */
function buildApp(options: { issuer?: string; cooldownMs?: number } = {}) {
  const registry = createRegistry("entitlement");
  const clock = { now: 0 };
  const settings: JwtSettings = {
    issuer: options.issuer ?? idp.issuer,
    audience: IDP_AUDIENCE,
    jwksUrl: undefined,
    cooldownMs: options.cooldownMs ?? 30_000,
    readScope: "entitlements.read",
    writeScope: "entitlements.write",
  };
  const keys = createKeySource(settings, {
    registry,
    metricPrefix: "entitlement_auth",
    log: silentLogger,
    now: () => clock.now,
  });
  const auth: AuthSettings = {
    disabled: false,
    metricsPublic: false,
    tokens: parseTokenEntries(tokenEntryLine("writer", STATIC, "read+write")).entries,
    jwt: createJwtAuthenticator(settings, keys),
  };
  const app = createApp({
    sql: f.sql,
    log: silentLogger,
    now: () => new Date(),
    idempotencyTtlHours: 24,
    auth,
    registry,
  });
  return { app, clock, registry };
}

/** The value of a metric for one label set (0 when never counted). */
async function metricValue(
  registry: ReturnType<typeof createRegistry>,
  name: string,
  labels: Record<string, string> = {},
) {
  const metric = await registry.getSingleMetric(name)?.get();
  const matches = (v: { labels: Record<string, unknown> }) =>
    Object.entries(labels).every(([k, x]) => v.labels[k] === x);
  return metric?.values.find(matches)?.value ?? 0;
}
const refusals = (registry: ReturnType<typeof createRegistry>, reason: string) =>
  metricValue(registry, "entitlement_auth_refusals_total", { reason });

let n = 0;
const grant = (app: ReturnType<typeof buildApp>["app"], token: string) => {
  n += 1;
  return send(
    app,
    commandRequest(
      "grants",
      { user_id: `user-${n}`, stock_keeping_unit: "sku-1", reason: "purchase", purchase_id: `p-${n}` },
      { authorization: `Bearer ${token}`, "idempotency-key": `k-${n}` },
    ),
  );
};
const challenge = async (app: ReturnType<typeof buildApp>["app"], token: string) => {
  const response = await app.handle(
    commandRequest(
      "grants",
      { user_id: "u", stock_keeping_unit: "s", reason: "r", purchase_id: "p" },
      {
        authorization: `Bearer ${token}`,
        "idempotency-key": "k-refused",
      },
    ),
  );
  return {
    status: response.status,
    header: response.headers.get("www-authenticate"),
    body: (await response.json()) as { code: string; message: string },
  };
};

beforeAll(async () => {
  f = await openApi("ent_jwt");
  idp = await startTestIdp();
});
// Dropping the database waits for a checkpoint: 4–6 s on the shared server under load, beyond the default 5 s.
afterAll(async () => {
  await idp.close();
  await f.close();
}, 30_000);
beforeEach(async () => {
  idp.up();
  await f.reset();
});

describe("a client-credentials token from the provider", () => {
  test("grants end to end: 200, the outbox event, and the audit naming the client", async () => {
    const { app } = buildApp();
    const token = await idp.token(CLIENTS.payments);
    const reply = await grant(app, token);
    expect([reply.status, reply.json.status]).toEqual([200, "ACTIVE"]);
    expect(await countRows(f.sql)).toEqual({ entitlements: 1, audit: 1, outbox: 1, idempotency: 1 });
    const [audit] = await f.sql`select caller from entitlement_audit`;
    expect(audit?.caller, "the audit records the client, marked as an issuer's caller").toBe("jwt:payments");
    const [event] = await f.sql`select status from outbox_events`;
    expect(event?.status).toBe("PENDING");
    const [key] = await f.sql`select caller from idempotency_keys`;
    expect(key?.caller, "idempotency keys are scoped to the client").toBe("jwt:payments");
  });

  test("static tokens keep working beside it, as their own callers", async () => {
    const { app } = buildApp();
    expect((await grant(app, STATIC)).status).toBe(200);
    expect((await grant(app, await idp.token(CLIENTS.payments))).status).toBe(200);
    const rows = await f.sql`select caller from entitlement_audit order by caller`;
    expect(rows.map((r) => r.caller)).toEqual(["jwt:payments", "writer"]);
  });

  test("a reader's token: 403 insufficient_scope on a grant, nothing written; it may read", async () => {
    const { app, registry } = buildApp();
    const token = await idp.token(CLIENTS.reports);
    const refused = await challenge(app, token);
    expect(refused).toEqual({
      status: 403,
      header: 'Bearer error="insufficient_scope", scope="entitlements.write"',
      body: { code: "FORBIDDEN", message: "this token does not have the entitlements.write scope" },
    });
    expect((await countRows(f.sql)).entitlements).toBe(0);
    const list = await app.handle(
      new Request("http://localhost/v1/users/u/entitlements", { headers: { authorization: `Bearer ${token}` } }),
    );
    expect(list.status).toBe(200);
    expect(await refusals(registry, "insufficient_scope")).toBe(1);
  });

  test("a token the provider made for another audience: 401 invalid_token", async () => {
    const { app, registry } = buildApp();
    const token = await idp.token(CLIENTS.payments, { resource: "https://other-service.test" });
    const refused = await challenge(app, token);
    expect([refused.status, refused.header, refused.body.code]).toEqual([
      401,
      'Bearer error="invalid_token"',
      "UNAUTHORIZED",
    ]);
    expect(await refusals(registry, "audience")).toBe(1);
  });

  test("forged with the provider's own key but failing one check: 401 invalid_token, nothing written", async () => {
    const { app } = buildApp();
    const now = Math.floor(Date.now() / 1000);
    for (const token of [
      await idp.forge({ ...idp.claims(), iss: "https://evil.test" }),
      await idp.forge({ ...idp.claims(), exp: now - 600 }),
      await idp.forge({ ...idp.claims(), nbf: now + 600 }),
      await idp.forge(idp.claims(), { header: { typ: "id_token+jwt" } }),
    ]) {
      const refused = await challenge(app, token);
      expect([refused.status, refused.header]).toEqual([401, 'Bearer error="invalid_token"']);
    }
    expect(await countRows(f.sql)).toEqual({ entitlements: 0, audit: 0, outbox: 0, idempotency: 0 });
  });
});

describe("the provider's keys", () => {
  test("rotation: a token signed with a new key refetches the key set once per cooldown", async () => {
    const { app, clock } = buildApp({ cooldownMs: 5_000 });
    expect((await grant(app, await idp.token(CLIENTS.payments))).status).toBe(200);
    const fetched = idp.jwksFetches();
    await idp.rotate("key-2");
    const rotated = await idp.token(CLIENTS.payments);
    clock.now += 1_000;
    expect((await challenge(app, rotated)).status, "within the cooldown the new key is unknown").toBe(401);
    expect(idp.jwksFetches()).toBe(fetched);
    clock.now += 5_000;
    expect((await grant(app, rotated)).status, "after the cooldown the new key is fetched").toBe(200);
    expect(idp.jwksFetches()).toBe(fetched + 1);
  });

  test("the provider down with keys at hand: tokens still verify; the metric says so", async () => {
    const { app, clock, registry } = buildApp();
    const token = await idp.token(CLIENTS.payments);
    expect((await grant(app, token)).status).toBe(200);
    idp.down();
    clock.now += 60_000;
    // A new key id makes the service look for keys while the provider is unreachable.
    expect((await challenge(app, await idp.forge(idp.claims(), { header: { kid: "unknown" } }))).status).toBe(401);
    // A token not seen before, so it is checked against the keys held, not remembered from its first use.
    const fresh = await idp.forge({ ...idp.claims(), scope: "entitlements.write", jti: "during-the-outage" });
    expect((await grant(app, fresh)).status, "the last good keys stay in use").toBe(200);
    expect(await metricValue(registry, "entitlement_auth_jwks_unreachable")).toBe(1);
  });

  test("keys never fetched (the provider unreachable since start): 503 NOT_READY with Retry-After", async () => {
    const token = await idp.token(CLIENTS.payments);
    idp.down();
    const { app, registry } = buildApp();
    const response = await app.handle(
      new Request("http://localhost/v1/users/u/entitlements", { headers: { authorization: `Bearer ${token}` } }),
    );
    expect([
      response.status,
      response.headers.get("retry-after"),
      ((await response.json()) as { code: string }).code,
    ]).toEqual([503, "5", "NOT_READY"]);
    expect(await refusals(registry, "keys_unavailable")).toBe(1);
    const metrics = await app.handle(
      new Request("http://localhost/metrics", { headers: { authorization: `Bearer ${STATIC}` } }),
    );
    expect(metrics.status, "static tokens do not depend on the provider").toBe(200);
  });
});
