// The route that runs is the route that was authorised, however the request target is written. Every route of the
// service (console on) is sent through a listening server in odd forms of its target (no Host, an empty or one-letter
// Host, absolute-form, dot segments, doubled slashes, percent-encoded letters, prefixes that used to shift the
// router's reading of the path) with no token, a read token, a write-only token and a JWT without scopes; then more
// targets from a property. Which route ran is read from the HTTP metrics (the route label of each answer), and what
// was written from the tables: no caller ever reaches a route whose scope it lacks, and nothing is ever written by a
// caller without the write scope.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import fc from "fast-check";
import { createApp } from "../../src/entitlement/app.ts";
import type { AuthSettings } from "../../src/shared/auth/guard.ts";
import { createKeySource } from "../../src/shared/auth/jwks.ts";
import { createJwtAuthenticator } from "../../src/shared/auth/jwt.ts";
import type { JwtSettings } from "../../src/shared/auth/jwt-config.ts";
import { routeScopes } from "../../src/shared/auth/scope.ts";
import { parseTokenEntries, type Scope, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { createLogger, silentLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { IDP_AUDIENCE, startTestIdp, type TestIdp } from "../support/idp.ts";
import { rawRequest } from "../support/raw-http.ts";
import { type ApiFixture, countRows, openApi } from "./api.helpers.ts";

setDefaultTimeout(120_000);

const TOKENS = { reader: "ent_edge-reader-token", writer: "ent_edge-writer-only" };
type Credential = { name: string; scopes: readonly Scope[]; header: () => string[] };

let f: ApiFixture;
let idp: TestIdp;
let port = 0;
let stop: () => void;
let app: ReturnType<typeof createApp>;
const registry = createRegistry("entitlement");
const errors: string[] = [];
let credentials: Credential[];

beforeAll(async () => {
  f = await openApi("ent_edge_targets");
  idp = await startTestIdp();
  const jwtSettings: JwtSettings = {
    issuer: idp.issuer,
    audience: IDP_AUDIENCE,
    jwksUrl: undefined,
    cooldownMs: 30_000,
    readScope: "entitlements.read",
    writeScope: "entitlements.write",
  };
  const keys = createKeySource(jwtSettings, {
    registry: createRegistry("entitlement"),
    metricPrefix: "entitlement_auth",
    log: silentLogger,
    now: () => 0,
  });
  const auth: AuthSettings = {
    disabled: false,
    metricsPublic: false,
    tokens: parseTokenEntries(
      [tokenEntryLine("reader", TOKENS.reader, "read"), tokenEntryLine("writer", TOKENS.writer, "write")].join(","),
    ).entries,
    jwt: createJwtAuthenticator(jwtSettings, keys),
  };
  const log = createLogger({
    level: "error",
    service: "t",
    destination: { write: (line: string) => void errors.push(line) },
  });
  app = createApp({
    sql: f.sql,
    log,
    now: () => new Date(),
    idempotencyTtlHours: 24,
    auth,
    registry,
    console: { enabled: true, idleMs: 60_000, alwaysSecure: false },
    limits: { rateLimit: false },
  });
  const server = app.listen({ hostname: "127.0.0.1", port: 0 });
  port = server.server?.port ?? 0;
  stop = () => void server.stop(true);
  const unscoped = await idp.forge({ ...idp.claims(), scope: "openid profile" });
  const bearer = (token: string) => () => [`Authorization: Bearer ${token}`];
  credentials = [
    { name: "no token", scopes: [], header: () => [] },
    { name: "read token", scopes: ["read"], header: bearer(TOKENS.reader) },
    { name: "write-only token", scopes: ["write"], header: bearer(TOKENS.writer) },
    { name: "JWT without scopes", scopes: [], header: bearer(unscoped) },
  ];
});
afterAll(async () => {
  stop();
  await idp.close();
  await f.close();
}, 30_000);

/** The declared route (and its scope) of every route of the app, console included. */
function declaredRoutes() {
  const scopes = routeScopes(app.routes);
  return app.routes.map((route) => ({
    method: route.method,
    path: route.path,
    scope: scopes.find((s) => s.method === route.method && s.path === route.path)?.scope,
  }));
}

const OPEN_ROUTES = new Set(["/healthz", "/readyz", "/actuator/health/liveness", "/actuator/health/readiness"]);
const READ_DOCUMENTS = new Set(["/metrics", "/openapi.json"]);

/** What a route needs: "open", "console" (its own sign-in), or a scope. */
function needOf(path: string, scope: Scope | undefined): "open" | "console" | Scope | undefined {
  if (OPEN_ROUTES.has(path)) return "open";
  if (READ_DOCUMENTS.has(path)) return "read";
  if (path === "/console" || path.startsWith("/console/")) return "console";
  return scope;
}

/** Counts of answers by route label, to learn which route a request reached. */
async function answersByRoute(): Promise<Map<string, number>> {
  const values = (await registry.getSingleMetric("http_requests_total")?.get())?.values ?? [];
  const counts = new Map<string, number>();
  for (const v of values) {
    const key = `${v.labels.method} ${v.labels.route} ${v.labels.status}`;
    counts.set(key, (counts.get(key) ?? 0) + v.value);
  }
  return counts;
}

/** The route label (method route status) of the one answer given since `before`. */
async function reachedSince(before: Map<string, number>): Promise<string[]> {
  const after = await answersByRoute();
  return [...after].filter(([key, n]) => n > (before.get(key) ?? 0)).map(([key]) => key);
}

const BODY = JSON.stringify({ user_id: "edge-u", stock_keeping_unit: "edge-s", reason: "r", purchase_id: "p" });

/** A raw request: the target as written, the Host line (null: none) and the HTTP version. */
function rawText(method: string, target: string, host: string | null, version: string, extra: string[]): string {
  const lines = [
    `${method} ${target} HTTP/${version}`,
    ...(host === null ? [] : [`Host: ${host}`]),
    ...extra,
    "Connection: close",
    ...(method === "GET" || method === "HEAD"
      ? []
      : ["Content-Type: application/json", "Idempotency-Key: edge-key", `Content-Length: ${BODY.length}`]),
  ];
  return `${lines.join("\r\n")}\r\n\r\n${method === "GET" || method === "HEAD" ? "" : BODY}`;
}

/** The forms of one path's target that once made the edge and the router read two different paths. */
function oddForms(path: string): { form: string; target: string; host: string | null; version: string }[] {
  const escaped = path.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`);
  return [
    { form: "origin-form", target: path, host: "localhost", version: "1.1" },
    { form: "HTTP/1.0 without Host", target: path, host: null, version: "1.0" },
    { form: "empty Host", target: path, host: "", version: "1.1" },
    { form: "one-letter Host", target: path, host: "a", version: "1.1" },
    { form: "absolute-form", target: `http://localhost${path}`, host: "localhost", version: "1.1" },
    { form: "console prefix, no Host", target: `/console/a${path}`, host: null, version: "1.0" },
    { form: "11-character prefix, empty Host", target: `/aaaaaaaaaa${path}`, host: "", version: "1.1" },
    { form: "dot segments, no Host", target: `/console/..${path}`, host: null, version: "1.0" },
    { form: "dot segments, Host", target: `/console/..${path}`, host: "localhost", version: "1.1" },
    { form: "doubled slash", target: `/${path}`, host: "localhost", version: "1.1" },
    { form: "percent-encoded letter, no Host", target: escaped, host: null, version: "1.0" },
  ];
}

/** The routes a request reached, by label, and the route's need; fails on any route reached without its scope. */
async function sendAndCheck(
  credential: Credential,
  method: string,
  target: string,
  host: string | null,
  version: string,
  needs: Map<string, ReturnType<typeof needOf>>,
): Promise<string> {
  const before = await answersByRoute();
  const reply = await rawRequest(port, rawText(method, target, host, version, credential.header()));
  const reached = await reachedSince(before);
  const where = `${credential.name}: ${method} ${target} (Host ${host === null ? "none" : JSON.stringify(host)})`;
  expect(reply.status, `${where}: never a 5xx (${reply.body.slice(0, 120)})`).toBeLessThan(500);
  for (const label of reached) {
    const [, route, status] = label.split(" ");
    const need = needs.get(`${method === "HEAD" ? "GET" : method} ${route}`);
    if (need === undefined || need === "open" || need === "console") continue;
    // A route reached means the edge let the request through; 401/403 are the edge's own refusals.
    if (status === "401" || status === "403") continue;
    expect(credential.scopes, `${where} reached ${route} (${status}), which needs ${need}`).toContain(need);
  }
  return `${reply.status}`;
}

function needsByRoute(): Map<string, ReturnType<typeof needOf>> {
  return new Map(declaredRoutes().map((r) => [`${r.method} ${r.path}`, needOf(r.path, r.scope)]));
}

describe("the route that runs is the route that was authorised", () => {
  test("every route declares what it needs: a scope, open probes, or the console's own sign-in", () => {
    const undeclared = declaredRoutes().filter((r) => needOf(r.path, r.scope) === undefined);
    expect(undeclared, "a route without a declared scope would be reachable by any valid token").toEqual([]);
  });

  test("nothing is written by a caller without the write scope, whatever the target", async () => {
    const writes = declaredRoutes().filter((r) => r.method === "POST");
    const needs = needsByRoute();
    for (const route of writes) {
      for (const { target, host, version } of oddForms(route.path.replace(/:[a-z_]+/g, "edge-param"))) {
        for (const credential of credentials.filter((c) => !c.scopes.includes("write"))) {
          await sendAndCheck(credential, route.method, target, host, version, needs);
        }
      }
    }
    expect(await countRows(f.sql)).toMatchObject({ entitlements: 0, audit: 0, outbox: 0 });
  });

  test("every route, in every odd form of its target, with every kind of caller", async () => {
    const needs = needsByRoute();
    const routes = declaredRoutes().filter((r) => r.method !== "ALL");
    expect(routes.length, "the matrix covers the API, the probes and the console").toBeGreaterThan(20);
    for (const route of routes) {
      const path = route.path.replace(/:[a-z_]+/g, "edge-param");
      for (const { target, host, version } of oddForms(path)) {
        for (const credential of credentials)
          await sendAndCheck(credential, route.method, target, host, version, needs);
      }
    }
    expect(errors, "the edge and the router never disagree on a route").toEqual([]);
  });

  test("a property: any prefix, dot segment, slash run, escape or Host, never a route beyond the caller's scope", async () => {
    const needs = needsByRoute();
    const routes = declaredRoutes().filter((r) => r.method !== "ALL" && needOf(r.path, r.scope) !== "open");
    const segment = fc.constantFrom("console", "a", "..", ".", "", "%2e%2e", "aaaaaaaaaa", "v1", "%2F", "\\..");
    const arbitrary = fc.record({
      route: fc.constantFrom(...routes),
      prefix: fc.array(segment, { maxLength: 4 }),
      host: fc.constantFrom(null, "", "a", "ab", "abc", "localhost", "a/b", "[::"),
      version: fc.constantFrom("1.0", "1.1"),
      credential: fc.integer({ min: 0, max: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ route, prefix, host, version, credential }) => {
        const path = route.path.replace(/:[a-z_]+/g, "edge-param");
        const target = prefix.length ? `/${prefix.join("/")}${path}` : path;
        const chosen = credentials[credential] as Credential;
        await sendAndCheck(chosen, route.method, target, version === "1.0" ? null : host, version, needs);
      }),
      { numRuns: 300 },
    );
    expect(errors).toEqual([]);
  });

  test("a target that is not a path is refused before any route", async () => {
    const reply = await rawRequest(port, "GET * HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    expect(reply.status).toBe(400);
  });
});
