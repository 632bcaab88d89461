// Authentication, scopes and abuse limits without I/O: token entries, constant-time lookup, which path needs what,
// the token bucket on a fake clock, the database gate, the configuration rules and the token subcommand.
import { describe, expect, test } from "bun:test";
import { createApp } from "../../src/entitlement/app.ts";
import { loadEntitlementConfig } from "../../src/entitlement/config.ts";
import { createGate } from "../../src/entitlement/edge/limits/gate.ts";
import { tokenSubcommand } from "../../src/entitlement/ops/tokens.ts";
import { loadNotificationConfig } from "../../src/notification/config.ts";
import { authenticate, bearerToken, requiredAccess } from "../../src/shared/auth/guard.ts";
import { routeScopes } from "../../src/shared/auth/scope.ts";
import { findTokenEntry, newToken, parseTokenEntries, sha256, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import type { Sql } from "../../src/shared/db.ts";
import { ApiError } from "../../src/shared/http/errors.ts";
import { createRateLimiter } from "../../src/shared/http/rate-limit.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { configProblems } from "../support/captures.ts";

const hex = (token: string) => sha256(token).toString("hex");

/** The routes of the real app, as declared (building the app touches no database). */
const appRoutes = createApp({
  sql: {} as Sql,
  log: silentLogger,
  now: () => new Date(),
  idempotencyTtlHours: 24,
  auth: { disabled: false, tokens: [], metricsPublic: false },
}).routes;
const scopes = routeScopes(appRoutes);
/** What a request needs, by the scopes the real routes declare. */
const accessOf = (method: string, path: string, metricsPublic = false) =>
  requiredAccess(scopes, method, path, metricsPublic).access;

function apiErrorOf(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error("expected an ApiError");
}

describe("token entries", () => {
  test("name:sha256hex:scopes, comma-separated; one name may hold several digests", () => {
    const { entries, problems } = parseTokenEntries(
      `payments:${hex("a")}:write, gateway:${hex("b").toUpperCase()}:read,payments:${hex("c")}:read+write`,
    );
    expect(problems).toEqual([]);
    expect(entries.map((e) => [e.name, [...e.scopes]])).toEqual([
      ["payments", ["write"]],
      ["gateway", ["read"]],
      ["payments", ["read", "write"]],
    ]);
    expect(findTokenEntry(entries, "b")?.name).toBe("gateway");
    expect(findTokenEntry(entries, "c")?.scopes.has("read")).toBe(true);
    expect(findTokenEntry(entries, "unknown"), "an unknown token matches nothing").toBeUndefined();
    expect(findTokenEntry(entries, hex("a")), "the digest itself is not a token").toBeUndefined();
  });

  test("every bad entry is reported by position, and a pasted token is never echoed", () => {
    const pasted = newToken();
    const { entries, problems } = parseTokenEntries(
      [
        `ok:${hex("x")}:read`,
        `bad:${pasted}:write`,
        `Upper:${hex("y")}:read`,
        `s:${hex("z")}:admin`,
        "two:parts",
        "",
      ].join(","),
    );
    expect(entries, "a configuration with problems yields no tokens").toEqual([]);
    expect(problems).toEqual([
      "ENTITLEMENT_AUTH_TOKENS entry 2 (bad): the digest must be 64 hex characters, the SHA-256 of the token (never the token itself)",
      "ENTITLEMENT_AUTH_TOKENS entry 3: the name must be 1 to 64 characters of a-z, 0-9, _ and -",
      "ENTITLEMENT_AUTH_TOKENS entry 4 (s): scopes must be read, write or read+write",
      "ENTITLEMENT_AUTH_TOKENS entry 5: expected name:sha256hex:scopes (3 fields separated by ':')",
      "ENTITLEMENT_AUTH_TOKENS entry 6: expected name:sha256hex:scopes (3 fields separated by ':')",
    ]);
    expect(problems.join("\n")).not.toContain(pasted);
  });

  test("one digest under two names is refused (the caller would be ambiguous)", () => {
    const { problems } = parseTokenEntries(`a:${hex("t")}:read,b:${hex("t")}:write`);
    expect(problems).toEqual([
      "ENTITLEMENT_AUTH_TOKENS entry 2 (b): the same digest as entry 1: a token belongs to one name",
    ]);
  });
});

describe("who may call what", () => {
  const settings = {
    disabled: false,
    metricsPublic: false,
    tokens: parseTokenEntries(`w:${hex("tw")}:write,r:${hex("tr")}:read`).entries,
  };
  test("paths and the access they need", () => {
    expect(accessOf("GET", "/healthz", false)).toBe("open");
    expect(accessOf("GET", "/readyz", false)).toBe("open");
    expect(accessOf("GET", "/actuator/health/liveness", false)).toBe("open");
    expect(accessOf("GET", "/actuator/health/readiness", false)).toBe("open");
    expect(accessOf("GET", "/actuator/health", false), "only the two probes are open").toBe("authenticated");
    expect(accessOf("GET", "/metrics", false)).toBe("read");
    expect(accessOf("GET", "/openapi.json", false)).toBe("read");
    expect(accessOf("GET", "/metrics", true)).toBe("open");
    expect(accessOf("GET", "/openapi.json", true)).toBe("open");
    expect(accessOf("POST", "/v1/entitlements/grants", false)).toBe("write");
    expect(accessOf("POST", "/v1/entitlements/revokes", false)).toBe("write");
    expect(accessOf("GET", "/v1/users/u%2F1/entitlements", false)).toBe("read");
    expect(accessOf("GET", "/v1/users/u/entitlements/s%2F1", false)).toBe("read");
    expect(accessOf("GET", "/v1/users/u/entitlements/s/history", false)).toBe("read");
    expect(accessOf("POST", "/v1/entitlements/bundle-grants", false)).toBe("write");
    expect(accessOf("GET", "/v1/users/u/entitlements/", false), "anything else needs some token").toBe("authenticated");
    expect(accessOf("GET", "/healthz/", false)).toBe("authenticated");
    expect(accessOf("GET", "/v1/entitlements/grants"), "another method on a path needs that path's scope").toBe(
      "write",
    );
  });

  test("every API route declares its scope on the route", () => {
    const api = appRoutes.filter((r) => r.path.startsWith("/v1/"));
    expect(api.length, "the API has routes").toBeGreaterThan(0);
    for (const route of api) {
      expect(routeScopes([route]).length, `${route.method} ${route.path} declares a scope`).toBe(1);
    }
  });

  test("Bearer header parsing", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken("bearer abc")).toBe("abc");
    for (const bad of [null, "", "Bearer", "Bearer ", "Basic abc", "Bearer a b", `Bearer ${"x".repeat(600)}`])
      expect(bearerToken(bad)).toBeUndefined();
  });

  test("401 with WWW-Authenticate for a missing or unknown token, 403 for a missing scope", () => {
    for (const header of [null, "Bearer nope", "Basic dHc="]) {
      const e = apiErrorOf(() => authenticate(settings, accessOf("POST", "/v1/entitlements/grants"), header));
      expect([e.status, e.code, e.headers["www-authenticate"]]).toEqual([401, "UNAUTHORIZED", "Bearer"]);
    }
    const e = apiErrorOf(() => authenticate(settings, accessOf("POST", "/v1/entitlements/grants"), "Bearer tr"));
    expect([e.status, e.code]).toEqual([403, "FORBIDDEN"]);
    expect(apiErrorOf(() => authenticate(settings, accessOf("GET", "/metrics"), "Bearer tw")).status).toBe(403);
    expect(authenticate(settings, accessOf("POST", "/v1/entitlements/grants"), "Bearer tw")?.name).toBe("w");
    expect(
      authenticate(settings, accessOf("GET", "/nowhere"), "Bearer tr")?.name,
      "any valid token may learn a path is 404",
    ).toBe("r");
    expect(authenticate(settings, accessOf("GET", "/healthz"), null)).toBeUndefined();
    expect(authenticate({ ...settings, disabled: true }, accessOf("POST", "/v1/entitlements/grants"), null)?.name).toBe(
      "",
    );
  });
});

describe("rate limit (token bucket, fake clock)", () => {
  test("burst, then refusals with Retry-After ≥ 1, refilled over time; callers are independent", () => {
    let now = 0;
    const limiter = createRateLimiter({ ratePerSecond: 2, burst: 3 }, () => now);
    expect([limiter.take("a"), limiter.take("a"), limiter.take("a")]).toEqual([undefined, undefined, undefined]);
    expect(limiter.take("a"), "the 4th request within the burst window waits 1s").toBe(1);
    expect(limiter.take("b"), "another caller has its own bucket").toBeUndefined();
    now += 499;
    expect(limiter.take("a")).toBe(1);
    now += 1;
    expect(limiter.take("a"), "after 500ms at 2/s one token is back").toBeUndefined();
    now += 60_000;
    expect([limiter.take("a"), limiter.take("a"), limiter.take("a"), limiter.take("a")]).toEqual([
      undefined,
      undefined,
      undefined,
      1,
    ]);
  });

  test("a slow rate gives a Retry-After of several seconds", () => {
    const limiter = createRateLimiter({ ratePerSecond: 0.1, burst: 1 }, () => 0);
    expect(limiter.take("a")).toBeUndefined();
    expect(limiter.take("a")).toBe(10);
  });

  test("keyed by what traffic brings, it keeps at most maxKeys buckets, forgetting the one used the longest ago", () => {
    const limiter = createRateLimiter({ ratePerSecond: 0.001, burst: 1 }, () => 0, { maxKeys: 2 });
    expect([limiter.take("a"), limiter.take("b")]).toEqual([undefined, undefined]);
    expect(limiter.take("a"), "a's bucket is empty").toBe(1000);
    expect(limiter.take("c"), "a third key evicts b, used the longest ago").toBeUndefined();
    expect(limiter.take("a"), "a was kept").toBe(1000);
    expect(limiter.take("b"), "b starts full again").toBeUndefined();
  });
});

describe("database gate", () => {
  const never = () => new Promise<never>(() => {});
  test("a full gate with a full queue refuses at once with 503 NOT_READY", async () => {
    const gate = createGate({ slots: 1, maxQueue: 0, queueTimeoutMs: 1_000, requestTimeoutMs: 5_000 });
    void gate.run(never).catch(() => {});
    const started = performance.now();
    const error = await gate.run(async () => 1).catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect([error.status, error.code]).toEqual([503, "NOT_READY"]);
    expect(performance.now() - started).toBeLessThan(100);
  });

  test("a waiter gives up after the queue timeout; a released slot goes to the next waiter", async () => {
    const gate = createGate({ slots: 1, maxQueue: 4, queueTimeoutMs: 50, requestTimeoutMs: 5_000 });
    let release = () => {};
    const first = gate.run(() => new Promise<void>((r) => (release = r)));
    const waiting = gate.run(async () => "second");
    expect(gate.load()).toEqual({ active: 1, waiting: 1 });
    expect((await waiting.catch((e) => e)).message).toBe("too many requests in progress, retry later");
    expect(gate.load()).toEqual({ active: 1, waiting: 0 });
    const third = gate.run(async () => "third");
    release();
    await first;
    expect(await third).toBe("third");
    expect(gate.load()).toEqual({ active: 0, waiting: 0 });
  });

  test("the request timeout answers 503 but keeps the slot until the work really ends", async () => {
    const gate = createGate({ slots: 1, maxQueue: 0, queueTimeoutMs: 10, requestTimeoutMs: 30 });
    let finish = () => {};
    const error = await gate.run(() => new Promise<void>((r) => (finish = r))).catch((e) => e);
    expect([error.status, error.message]).toEqual([503, "request timed out, retry later"]);
    expect(gate.load().active, "the connection is still busy").toBe(1);
    finish();
    await Bun.sleep(1);
    expect(gate.load().active).toBe(0);
  });
});

describe("configuration", () => {
  const entry = `payments:${hex("t")}:write`;
  test("no tokens and authentication not disabled: refused, naming both variables", () => {
    const problems = configProblems(() => loadEntitlementConfig({}));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("ENTITLEMENT_AUTH_TOKENS");
    expect(problems[0]).toContain("ENTITLEMENT_AUTH_DISABLED");
  });

  test("tokens and ENTITLEMENT_AUTH_DISABLED=true together are refused", () => {
    const problems = configProblems(() =>
      loadEntitlementConfig({ ENTITLEMENT_AUTH_TOKENS: entry, ENTITLEMENT_AUTH_DISABLED: "true" }),
    );
    expect(problems[0]).toContain("set only one of them");
  });

  test("bad entries are reported one per line; commands that never serve need no tokens", () => {
    const problems = configProblems(() =>
      loadEntitlementConfig({ ENTITLEMENT_AUTH_TOKENS: `${entry},x:y:read,bad name:${hex("u")}:read` }),
    );
    expect(problems).toHaveLength(2);
    expect(loadEntitlementConfig({}, { requireAuth: false }).auth.tokens).toEqual([]);
    expect(
      configProblems(() => loadEntitlementConfig({ ENTITLEMENT_AUTH_TOKENS: "x" }, { requireAuth: false })),
    ).toHaveLength(1);
  });

  test("defaults: metrics guarded, rate limit 1000/s burst 2000, 10s request timeout, 1s queue timeout", () => {
    const c = loadEntitlementConfig({ ENTITLEMENT_AUTH_TOKENS: entry });
    expect(c.auth.disabled).toBe(false);
    expect(c.auth.metricsPublic).toBe(false);
    expect(c.auth.tokens.map((t) => t.name)).toEqual(["payments"]);
    expect(c.limits).toEqual({
      rateLimit: { ratePerSecond: 1000, burst: 2000 },
      requestTimeoutMs: 10_000,
      queueTimeoutMs: 1_000,
    });
    const off = loadEntitlementConfig({ ENTITLEMENT_AUTH_DISABLED: "true", ENTITLEMENT_RATE_LIMIT_ENABLED: "false" });
    expect(off.limits.rateLimit).toBeUndefined();
  });

  test("Notification: enabling the debug inbox without a token (of at least 16 characters) is refused", () => {
    expect(configProblems(() => loadNotificationConfig({ NOTIFICATION_DEBUG_API_ENABLED: "true" }))[0]).toContain(
      "NOTIFICATION_DEBUG_API_TOKEN",
    );
    const short = configProblems(() =>
      loadNotificationConfig({ NOTIFICATION_DEBUG_API_ENABLED: "true", NOTIFICATION_DEBUG_API_TOKEN: "short-secret" }),
    );
    expect(short.join("\n")).not.toContain("short-secret");
    const ok = loadNotificationConfig({
      NOTIFICATION_DEBUG_API_ENABLED: "true",
      NOTIFICATION_DEBUG_API_TOKEN: "a-long-enough-debug-token",
    });
    expect(ok.debugApi).toEqual({ enabled: true, token: "a-long-enough-debug-token" });
  });
});

describe("entitlement token new NAME SCOPES", () => {
  async function run(args: string[]) {
    const lines: string[] = [];
    const code = await tokenSubcommand((line) => lines.push(line)).run(args);
    return { code, lines };
  }

  test("prints a fresh token and an entry that the configuration accepts and that authenticates it", async () => {
    const { code, lines } = await run(["new", "payments", "read+write"]);
    expect(code).toBe(0);
    const token = /^token: (ent_[A-Za-z0-9_-]{43})$/.exec(lines[0] ?? "")?.[1] as string;
    const entry = /^entry: (\S+)$/.exec(lines[1] ?? "")?.[1] as string;
    expect(token, "the token is ent_ + 32 bytes of base64url").toBeDefined();
    expect(entry).toBe(tokenEntryLine("payments", token, "read+write"));
    expect(entry).not.toContain(token);
    const config = loadEntitlementConfig({ ENTITLEMENT_AUTH_TOKENS: entry });
    const caller = authenticate(config.auth, accessOf("POST", "/v1/entitlements/grants"), `Bearer ${token}`);
    expect(caller?.name).toBe("payments");
    const again = await run(["new", "payments", "read+write"]);
    expect(again.lines[0], "every token is fresh").not.toBe(lines[0]);
  });

  test("usage errors exit 2", async () => {
    for (const args of [
      [],
      ["new"],
      ["new", "x"],
      ["old", "x", "read"],
      ["new", "Bad", "read"],
      ["new", "x", "admin"],
      ["new", "x", "read", "more"],
    ]) {
      expect((await run(args)).code, args.join(" ")).toBe(2);
    }
  });
});
