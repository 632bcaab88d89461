// JWTs at the edge without I/O: which path a token takes (the shape decides, so a JWT never matches a static digest
// and a static token never reaches the JWT path), the HTTP answer and metric of each refusal, and the variables.
import { describe, expect, test } from "bun:test";
import { Writable } from "node:stream";
import pino from "pino";
import { Registry } from "prom-client";
import { loadEntitlementConfig } from "../../src/entitlement/config.ts";
import { authenticate, type Caller, looksLikeJwt, verifyToken } from "../../src/shared/auth/guard.ts";
import type { JwtAuthenticator } from "../../src/shared/auth/jwt.ts";
import { createRefusalReporter, type Refusal } from "../../src/shared/auth/refusal.ts";
import { parseTokenEntries, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { ConfigError } from "../../src/shared/config.ts";
import { ApiError } from "../../src/shared/http/errors.ts";

const A_JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";
const STATIC = "ent_static-token";

/** A JWT path that records what reached it and answers as told. */
function fakeJwt(answer: Caller | Refusal) {
  const seen: string[] = [];
  const jwt: JwtAuthenticator = async (token) => {
    seen.push(token);
    return answer;
  };
  return { jwt, seen };
}

const settings = (jwt?: JwtAuthenticator, onRefusal?: (r: Refusal) => void) => ({
  disabled: false,
  metricsPublic: false,
  // A static digest of a JWT-shaped string: with an issuer configured it must never match.
  tokens: parseTokenEntries([tokenEntryLine("svc", STATIC, "write"), tokenEntryLine("odd", A_JWT, "write")].join(","))
    .entries,
  ...(jwt ? { jwt } : {}),
  ...(onRefusal ? { onRefusal } : {}),
});

async function refusalOf(run: () => unknown): Promise<ApiError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error("expected an ApiError");
}

describe("which path a token takes", () => {
  test("the shape: three base64url parts (the last may be empty) is a JWT; ent_ tokens never are", () => {
    expect(looksLikeJwt(A_JWT)).toBe(true);
    expect(looksLikeJwt("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")).toBe(true);
    for (const token of [STATIC, "a.b", "a.b.c.d", "a..c", "a.b.c=", "ent_abc"])
      expect(looksLikeJwt(token)).toBe(false);
  });

  test("with an issuer, a JWT goes to the JWT path only, never to the static digests; a static token never to the JWT path", async () => {
    const { jwt, seen } = fakeJwt({ refused: "signature" });
    const s = settings(jwt);
    expect(await verifyToken(s, A_JWT), "the static entry of the same string is not consulted").toEqual({
      refused: "signature",
    });
    expect((await verifyToken(s, STATIC)) as Caller).toMatchObject({ name: "svc" });
    expect(seen, "only the JWT reached the JWT path").toEqual([A_JWT]);
  });

  test("without an issuer every token is a static token, as before", () => {
    expect(authenticate({ ...settings(), jwt: undefined }, "write", `Bearer ${A_JWT}`)?.name).toBe("odd");
    expect(authenticate({ ...settings(), jwt: undefined }, "write", `Bearer ${STATIC}`)?.name).toBe("svc");
  });

  test("a JWT may be longer than a static token, up to 6 KiB", async () => {
    const long = `${"a".repeat(3000)}.${"b".repeat(2000)}.${"c".repeat(300)}`;
    const { jwt, seen } = fakeJwt({ name: "jwt:x", scopes: new Set(["write"]) });
    expect((await authenticate(settings(jwt), "write", `Bearer ${long}`))?.name).toBe("jwt:x");
    const tooLong = `${"a".repeat(7000)}.b.c`;
    expect((await refusalOf(() => authenticate(settings(jwt), "write", `Bearer ${tooLong}`))).status).toBe(401);
    expect(seen).toHaveLength(1);
  });
});

describe("refusals", () => {
  test("401 invalid_token for a bad JWT, 403 insufficient_scope for a missing scope, 503 without keys", async () => {
    const told: Refusal[] = [];
    const bad = await refusalOf(() =>
      authenticate(
        settings(fakeJwt({ refused: "expired" }).jwt, (r) => told.push(r)),
        "write",
        `Bearer ${A_JWT}`,
      ),
    );
    expect([bad.status, bad.code, bad.headers["www-authenticate"]]).toEqual([
      401,
      "UNAUTHORIZED",
      'Bearer error="invalid_token"',
    ]);
    const reader = fakeJwt({ name: "jwt:reports", scopes: new Set(["read"]) }).jwt;
    const scope = await refusalOf(() =>
      authenticate(
        settings(reader, (r) => told.push(r)),
        "write",
        `Bearer ${A_JWT}`,
      ),
    );
    expect([scope.status, scope.code, scope.headers["www-authenticate"]]).toEqual([
      403,
      "FORBIDDEN",
      'Bearer error="insufficient_scope", scope="write"',
    ]);
    const keys = await refusalOf(() =>
      authenticate(settings(fakeJwt({ refused: "keys_unavailable" }).jwt), "read", `Bearer ${A_JWT}`),
    );
    expect([keys.status, keys.code, keys.headers["retry-after"]]).toEqual([503, "NOT_READY", "5"]);
    expect(told).toEqual([
      { refused: "expired" },
      { refused: "insufficient_scope", scope: "write", caller: "jwt:reports" },
    ]);
    expect(await authenticate(settings(reader), "authenticated", `Bearer ${A_JWT}`)).toMatchObject({
      name: "jwt:reports",
    });
  });

  test("the challenge of a JWT caller names the OAuth scope its issuer grants, not the service's own name", async () => {
    const reader = fakeJwt({
      name: "jwt:reports",
      scopes: new Set(["read"]),
      scopeNames: { read: "entitlements.read", write: "entitlements.write" },
    }).jwt;
    const told: Refusal[] = [];
    const refused = await refusalOf(() =>
      authenticate(
        settings(reader, (r) => told.push(r)),
        "write",
        `Bearer ${A_JWT}`,
      ),
    );
    expect([refused.status, refused.headers["www-authenticate"], refused.message]).toEqual([
      403,
      'Bearer error="insufficient_scope", scope="entitlements.write"',
      "this token does not have the entitlements.write scope",
    ]);
    expect(told[0], "the refusal's own reason keeps the service's scope").toMatchObject({ scope: "write" });
  });

  test("the reason labels a metric and a log line, at most one line per reason per quiet spell; never the token", async () => {
    const registry = new Registry();
    const lines: Record<string, unknown>[] = [];
    const log = pino(
      { level: "info" },
      new Writable({
        write(chunk, _e, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
    let clock = 0;
    const report = createRefusalReporter({
      registry,
      metricPrefix: "entitlement_auth",
      log,
      quietMs: 10_000,
      now: () => clock,
    });
    const s = settings(fakeJwt({ refused: "audience" }).jwt, report);
    for (let i = 0; i < 5; i++) {
      clock += 1_000;
      await refusalOf(() => authenticate(s, "write", `Bearer ${A_JWT}`));
    }
    await refusalOf(() => authenticate(s, "write", null));
    clock += 10_000;
    await refusalOf(() => authenticate(s, "write", `Bearer ${A_JWT}`));
    const metrics = await registry.metrics();
    expect(metrics).toContain('entitlement_auth_refusals_total{reason="audience"} 6');
    expect(metrics).toContain('entitlement_auth_refusals_total{reason="missing"} 1');
    await Bun.sleep(0);
    expect(lines.map((l) => [l.msg, l.reason, l.skipped])).toEqual([
      ["request refused", "audience", undefined],
      ["request refused", "missing", undefined],
      ["request refused", "audience", 4],
    ]);
    expect(JSON.stringify(lines)).not.toContain(A_JWT.split(".")[1]);
  });
});

describe("the JWT variables", () => {
  const entry = tokenEntryLine("svc", STATIC, "write");
  const problemsOf = (env: Record<string, string>) => {
    try {
      loadEntitlementConfig(env);
      return [];
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
  };

  test("an issuer alone lets the service serve; defaults: 30s cooldown, entitlements.read / entitlements.write", () => {
    const config = loadEntitlementConfig({
      ENTITLEMENT_AUTH_JWT_ISSUER: "https://idp.example.com/realms/acme",
      ENTITLEMENT_AUTH_JWT_AUDIENCE: "entitlement",
    });
    expect(config.jwt).toEqual({
      issuer: "https://idp.example.com/realms/acme",
      audience: "entitlement",
      jwksUrl: undefined,
      cooldownMs: 30_000,
      readScope: "entitlements.read",
      writeScope: "entitlements.write",
    });
    expect(loadEntitlementConfig({ ENTITLEMENT_AUTH_TOKENS: entry }).jwt, "no issuer: no JWT path").toBeUndefined();
  });

  test("https required except on loopback hosts; the audience required with the issuer; each problem named", () => {
    for (const issuer of ["http://127.0.0.1:8080", "http://localhost:8080/realms/x", "http://[::1]:9000"]) {
      expect(problemsOf({ ENTITLEMENT_AUTH_JWT_ISSUER: issuer, ENTITLEMENT_AUTH_JWT_AUDIENCE: "a" }), issuer).toEqual(
        [],
      );
    }
    expect(
      problemsOf({
        ENTITLEMENT_AUTH_JWT_ISSUER: "http://idp.example.com",
        ENTITLEMENT_AUTH_JWT_JWKS_URL: "ftp://idp.example.com/certs",
      }),
    ).toEqual([
      "ENTITLEMENT_AUTH_JWT_ISSUER must be an https URL (http only on a loopback host such as 127.0.0.1)",
      "ENTITLEMENT_AUTH_JWT_JWKS_URL must be an https URL (http only on a loopback host such as 127.0.0.1)",
      "ENTITLEMENT_AUTH_JWT_AUDIENCE is required when ENTITLEMENT_AUTH_JWT_ISSUER is set: without it a token the issuer made for any other service would be accepted",
    ]);
    expect(
      problemsOf({
        ENTITLEMENT_AUTH_TOKENS: entry,
        ENTITLEMENT_AUTH_JWT_AUDIENCE: "a",
        ENTITLEMENT_AUTH_JWT_JWKS_COOLDOWN: "10ms",
      }),
    ).toEqual([
      'ENTITLEMENT_AUTH_JWT_JWKS_COOLDOWN="10ms" is invalid: expected a duration such as 250ms, 1s, 2m, 24h or 7d (a bare number means ms)',
      "ENTITLEMENT_AUTH_JWT_AUDIENCE is set but ENTITLEMENT_AUTH_JWT_ISSUER is not: set the issuer too",
    ]);
    expect(
      problemsOf({
        ENTITLEMENT_AUTH_JWT_ISSUER: "https://idp.example.com",
        ENTITLEMENT_AUTH_JWT_AUDIENCE: "a",
        ENTITLEMENT_AUTH_DISABLED: "true",
      })[0],
    ).toContain("set only one of them");
  });

  test("a scope name is an OAuth scope-token: a quote or a backslash could not be quoted in the 403 challenge", () => {
    const base = { ENTITLEMENT_AUTH_JWT_ISSUER: "https://idp.example.com", ENTITLEMENT_AUTH_JWT_AUDIENCE: "a" };
    expect(problemsOf({ ...base, ENTITLEMENT_AUTH_JWT_WRITE_SCOPE: "api://ent/write" })).toEqual([]);
    for (const name of ['ent"write', "ent\\write"]) {
      expect(problemsOf({ ...base, ENTITLEMENT_AUTH_JWT_WRITE_SCOPE: name })[0], name).toContain(
        "ENTITLEMENT_AUTH_JWT_WRITE_SCOPE",
      );
    }
  });
});
