// JWT access tokens without I/O: each check a token must pass and the reason its failure is refused with, the scopes
// and the caller it stands for, and the issuer's keys (rotation within the cooldown, an outage with and without keys
// at hand) through a fake fetch and a fake clock.
import { describe, expect, test } from "bun:test";
import { exportSPKI, type JWTPayload, SignJWT, UnsecuredJWT } from "jose";
import { Registry } from "prom-client";
import { createKeySource } from "../../src/shared/auth/jwks.ts";
import { createJwtAuthenticator, JWT_CALLER_PREFIX, scopesOf } from "../../src/shared/auth/jwt.ts";
import type { JwtSettings } from "../../src/shared/auth/jwt-config.ts";
import { TOKEN_NAME } from "../../src/shared/auth/tokens.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { capturedLog } from "../support/captures.ts";
import { newSigningKey, type SigningKey } from "../support/signing-key.ts";

const ISSUER = "https://idp.example.test/realms/acme";
const AUDIENCE = "https://entitlement.test";
const settings: JwtSettings = {
  issuer: ISSUER,
  audience: AUDIENCE,
  jwksUrl: undefined,
  cooldownMs: 30_000,
  readScope: "entitlements.read",
  writeScope: "entitlements.write",
};

/** An issuer behind a fake fetch: its discovery document and key set, a count of key-set fetches, and an off switch. */
function fakeIssuer(keys: SigningKey[]) {
  const state = { keys, up: true, jwksFetches: 0, discovery: { issuer: ISSUER, jwks_uri: `${ISSUER}/certs` } };
  const fetcher = (async (input: string | URL | Request) => {
    const url = String(input);
    if (!state.up) throw new TypeError("fetch failed: connection refused");
    if (url === `${ISSUER}/.well-known/openid-configuration`) return Response.json(state.discovery);
    if (url === `${ISSUER}/certs`) {
      state.jwksFetches += 1;
      return Response.json({ keys: state.keys.map((k) => k.publicJwk) });
    }
    return new Response("not found", { status: 404 });
  }) as typeof fetch;
  return { state, fetcher };
}

async function setup(options: { keys?: SigningKey[] } = {}) {
  const key = await newSigningKey("key-1");
  const issuer = fakeIssuer(options.keys ?? [key]);
  const clock = { now: 0 };
  const registry = new Registry();
  const { lines, log } = capturedLog();
  const source = createKeySource(settings, {
    registry,
    metricPrefix: "entitlement_auth",
    log,
    fetch: issuer.fetcher,
    now: () => clock.now,
  });
  const verify = createJwtAuthenticator(settings, source);
  return { key, issuer, clock, registry, lines, verify, source };
}

const nowS = () => Math.floor(Date.now() / 1000);
const claims = (extra: JWTPayload = {}): JWTPayload => ({
  iss: ISSUER,
  aud: AUDIENCE,
  iat: nowS(),
  exp: nowS() + 300,
  azp: "payments",
  scope: "entitlements.read entitlements.write",
  ...extra,
});
const sign = (key: SigningKey, payload: JWTPayload, header: Record<string, unknown> = {}) =>
  new SignJWT(payload)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "at+jwt", ...header })
    .sign(key.privateKey);
const reason = (verdict: object) => ("refused" in verdict ? verdict.refused : "accepted");

describe("the checks of a JWT access token", () => {
  test("a token from the issuer, for this audience, in time, stands for its client with its scopes", async () => {
    const { key, verify } = await setup();
    const payload = claims();
    const caller = await verify(await sign(key, payload));
    expect(caller).toEqual({
      name: "jwt:payments",
      scopes: new Set(["read", "write"]),
      expiresAtMs: Number(payload.exp) * 1000,
      scopeNames: { read: "entitlements.read", write: "entitlements.write" },
    });
  });

  test("each failed check is refused with its own reason", async () => {
    const { key, verify } = await setup();
    const other = await newSigningKey("key-1");
    const pem = await exportSPKI(
      (await crypto.subtle.importKey("jwk", key.publicJwk, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, true, [
        "verify",
      ])) as CryptoKey,
    );
    const hmacWithPublicKey = await new SignJWT(claims())
      .setProtectedHeader({ alg: "HS256", kid: key.kid })
      .sign(new TextEncoder().encode(pem));
    const good = await sign(key, claims());
    const [head] = good.split(".");
    const cases: Array<[string, string, string]> = [
      ["alg none (unsigned)", new UnsecuredJWT(claims()).encode(), "algorithm"],
      ["HS256 with the public key as the secret", hmacWithPublicKey, "algorithm"],
      ["another issuer", await sign(key, claims({ iss: "https://evil.example.test" })), "issuer"],
      ["another audience", await sign(key, claims({ aud: "https://other-service.test" })), "audience"],
      ["expired beyond the tolerance", await sign(key, claims({ exp: nowS() - 120 })), "expired"],
      ["not valid yet beyond the tolerance", await sign(key, claims({ nbf: nowS() + 120 })), "not_yet_valid"],
      ["issued in the future beyond the tolerance", await sign(key, claims({ iat: nowS() + 3_600 })), "not_yet_valid"],
      ["no exp", await sign(key, { ...claims(), exp: undefined }), "claims"],
      ["an ID token (typ header)", await sign(key, claims(), { typ: "id_token+jwt" }), "type"],
      ["a Keycloak ID token (typ claim)", await sign(key, claims({ typ: "ID" }), { typ: "JWT" }), "type"],
      ["signed by another key under the same kid", await sign(other, claims()), "signature"],
      [
        "a changed payload",
        `${head}.${Buffer.from('{"azp":"x"}').toString("base64url")}.${good.split(".")[2]}`,
        "signature",
      ],
      ["not JSON", "abc.def.ghi", "malformed"],
      ["no caller claim", await sign(key, { ...claims(), azp: undefined }), "no_caller"],
      ["a caller with a control character", await sign(key, claims({ azp: "pay\nments" })), "no_caller"],
    ];
    for (const [label, token, expected] of cases) expect(reason(await verify(token)), label).toBe(expected);
  });

  test("within the clock tolerance, exp and nbf still pass; typ JWT and at+jwt, and no typ, are access tokens", async () => {
    const { key, verify } = await setup();
    for (const token of [
      await sign(key, claims({ exp: nowS() - 10 })),
      await sign(key, claims({ nbf: nowS() + 10 })),
      await sign(key, claims({ iat: nowS() + 10 })),
      await sign(key, claims({ typ: "Bearer" }), { typ: "JWT" }),
      await sign(key, claims(), { typ: "application/at+jwt" }),
      await sign(key, claims(), { typ: undefined }),
    ]) {
      expect(reason(await verify(token))).toBe("accepted");
    }
  });

  test("the caller is azp, else client_id, else sub, behind a prefix no static token name can have", async () => {
    const { key, verify } = await setup();
    const nameOf = async (extra: JWTPayload) => {
      const verdict = await verify(await sign(key, { ...claims(), azp: undefined, ...extra }));
      return "name" in verdict ? verdict.name : verdict.refused;
    };
    expect(await nameOf({ azp: "gateway", client_id: "c", sub: "s" })).toBe("jwt:gateway");
    expect(await nameOf({ client_id: "campaigns", sub: "s" })).toBe("jwt:campaigns");
    expect(await nameOf({ sub: "9f1c-user" })).toBe("jwt:9f1c-user");
    expect(TOKEN_NAME.test(`${JWT_CALLER_PREFIX}payments`), "a static token can never be named like a JWT caller").toBe(
      false,
    );
  });

  test("scopes from scope (space separated) or scp (a string or an array), mapped by the configured names", () => {
    const names = { readScope: "ent:read", writeScope: "ent:write" };
    expect(scopesOf({ scope: "openid ent:read" }, names)).toEqual(new Set(["read"]));
    expect(scopesOf({ scp: "ent:write ent:read" }, names)).toEqual(new Set(["write", "read"]));
    expect(scopesOf({ scp: ["ent:write", 7, "profile"] }, names)).toEqual(new Set(["write"]));
    expect(scopesOf({ scope: "entitlements.write" }, names), "the defaults are not used once renamed").toEqual(
      new Set(),
    );
    expect(scopesOf({ scope: "ent:read-only" }, names), "a scope is a whole word").toEqual(new Set());
  });
});

describe("verified tokens are remembered", () => {
  test("until they expire, and no longer than their key set: a withdrawn key stops verifying", async () => {
    const s = await setup();
    let keyLookups = 0;
    let wall = Date.now();
    const verify = createJwtAuthenticator(
      settings,
      {
        ...s.source,
        key: (h, t) => {
          keyLookups += 1;
          return s.source.key(h, t);
        },
      },
      () => wall,
    );
    const token = await sign(s.key, claims({ exp: Math.floor(wall / 1000) + 60 }));
    expect([reason(await verify(token)), reason(await verify(token))]).toEqual(["accepted", "accepted"]);
    expect(keyLookups, "the second use was not verified again").toBe(1);
    wall += 60_000 + 31_000;
    expect(reason(await verify(token)), "past exp (and the tolerance) it is checked again, and refused").toBe(
      "expired",
    );

    const fresh = await sign(s.key, claims());
    expect(reason(await verify(fresh))).toBe("accepted");
    const next = await newSigningKey("key-2", "ES256");
    s.issuer.state.keys = [next];
    s.clock.now += 30_000;
    expect(reason(await verify(await sign(next, claims())))).toBe("accepted");
    expect(reason(await verify(fresh)), "its key left the key set: the remembered token is refused").toBe(
      "unknown_key",
    );
  });
});

describe("the issuer's keys", () => {
  test("an unknown kid refetches the key set, at most once per cooldown", async () => {
    const s = await setup();
    expect(reason(await s.verify(await sign(s.key, claims())))).toBe("accepted");
    expect(s.issuer.state.jwksFetches).toBe(1);
    const rotated = await newSigningKey("key-2", "ES256");
    s.issuer.state.keys = [s.key, rotated];
    s.clock.now += 1_000;
    expect(reason(await s.verify(await sign(rotated, claims()))), "within the cooldown: no refetch").toBe(
      "unknown_key",
    );
    expect(s.issuer.state.jwksFetches).toBe(1);
    s.clock.now += 30_000;
    expect(reason(await s.verify(await sign(rotated, claims()))), "after the cooldown the new key is fetched").toBe(
      "accepted",
    );
    const [a, b] = await Promise.all([
      s.verify(await sign(await newSigningKey("key-3", "ES256"), claims())),
      s.verify(await sign(await newSigningKey("key-4", "ES256"), claims())),
    ]);
    expect([reason(a), reason(b)]).toEqual(["unknown_key", "unknown_key"]);
    expect(s.issuer.state.jwksFetches, "unknown kids within the cooldown fetched nothing more").toBe(2);
  });

  test("the issuer down with keys at hand: they stay in use, the outage is logged once and shown by a metric", async () => {
    const s = await setup();
    const token = await sign(s.key, claims());
    expect(reason(await s.verify(token))).toBe("accepted");
    s.issuer.state.up = false;
    for (let i = 0; i < 3; i++) {
      s.clock.now += 60_000;
      expect(reason(await s.verify(await sign(await newSigningKey(`new-${i}`, "ES256"), claims())))).toBe(
        "unknown_key",
      );
      // A token never seen before (another jti), so it is checked against the keys, not remembered.
      const fresh = await sign(s.key, claims({ jti: `during-outage-${i}` }));
      expect(reason(await s.verify(fresh)), "the last good keys still verify").toBe("accepted");
    }
    s.clock.now += 11 * 60_000;
    expect(reason(await s.verify(token)), "keys older than their age are refetched in the background").toBe("accepted");
    await Bun.sleep(0);
    const metrics = await s.registry.metrics();
    expect(metrics).toContain("entitlement_auth_jwks_unreachable 1");
    expect(metrics).toContain('entitlement_auth_jwks_fetches_total{outcome="error"} 4');
    s.issuer.state.up = true;
    s.clock.now += 60_000;
    await s.source.refresh();
    expect(await s.registry.metrics()).toContain("entitlement_auth_jwks_unreachable 0");
    await Bun.sleep(0);
    expect(s.lines.map((l) => [l.level, l.msg, l.keys_kept])).toEqual([
      [40, "the issuer's signing keys cannot be fetched: the last good keys stay in use", true],
      [30, "the issuer's signing keys were fetched again", undefined],
    ]);
  });

  test("never fetched: 503 reason, no retry within the cooldown; the first fetch after it serves", async () => {
    const s = await setup();
    s.issuer.state.up = false;
    const token = await sign(s.key, claims());
    expect(reason(await s.verify(token))).toBe("keys_unavailable");
    expect(reason(await s.verify(token))).toBe("keys_unavailable");
    expect(await s.registry.metrics()).toContain('entitlement_auth_jwks_fetches_total{outcome="error"} 1');
    s.issuer.state.up = true;
    s.clock.now += 30_000;
    expect(reason(await s.verify(token))).toBe("accepted");
    await Bun.sleep(0);
    expect(s.lines[0]?.msg).toBe("the issuer's signing keys cannot be fetched and none ever were: JWT callers get 503");
  });

  test("a discovery document naming another issuer, or a plain-http jwks_uri elsewhere, yields no keys", async () => {
    for (const discovery of [
      { issuer: "https://evil.example.test", jwks_uri: `${ISSUER}/certs` },
      { issuer: ISSUER, jwks_uri: "http://idp.example.test/certs" },
    ]) {
      const s = await setup();
      s.issuer.state.discovery = discovery;
      expect(reason(await s.verify(await sign(s.key, claims())))).toBe("keys_unavailable");
    }
  });

  test("a published key that cannot be imported is an unknown key (401), told once per key set", async () => {
    const key = await newSigningKey("key-1");
    const issuer = fakeIssuer([key]);
    issuer.state.keys = [{ ...key, publicJwk: { ...key.publicJwk, n: "!!not-a-modulus!!" } }];
    const { lines, log } = capturedLog();
    const source = createKeySource(settings, {
      registry: new Registry(),
      metricPrefix: "entitlement_auth",
      log,
      fetch: issuer.fetcher,
      now: () => 0,
    });
    const verify = createJwtAuthenticator(settings, source);
    for (let i = 0; i < 3; i++) {
      expect(reason(await verify(await sign(key, claims({ jti: `t-${i}` })))), "refused, never thrown").toBe(
        "unknown_key",
      );
    }
    expect(lines.map((l) => [l.msg, l.kid])).toEqual([
      ["a key of the issuer's key set cannot be imported: tokens naming it are refused", "key-1"],
    ]);
  });

  test("the key set is read with a byte limit as it arrives: an endless reply is cut off, never held whole", async () => {
    const key = await newSigningKey("key-1");
    const issuer = fakeIssuer([key]);
    let pulled = 0;
    const chunk = new TextEncoder().encode(`{"keys":[${" ".repeat(64 * 1024)}`);
    const endless = (async (input: string | URL | Request) => {
      if (String(input) !== `${ISSUER}/certs`) return issuer.fetcher(input);
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled += 1;
          if (pulled > 1_000) controller.close();
          else controller.enqueue(chunk);
        },
      });
      return new Response(body, { headers: { "content-type": "application/json" } });
    }) as typeof fetch;
    const { lines, log } = capturedLog();
    const source = createKeySource(settings, {
      registry: new Registry(),
      metricPrefix: "entitlement_auth",
      log,
      fetch: endless,
      now: () => 0,
    });
    const verify = createJwtAuthenticator(settings, source);
    expect(reason(await verify(await sign(key, claims())))).toBe("keys_unavailable");
    expect(pulled, "reading stopped at the limit (256 KiB), not at the end of 64 MB").toBeLessThan(10);
    expect(String(lines[0]?.reason)).toContain("more than 262144 bytes");
  });

  test("ENTITLEMENT_AUTH_JWT_JWKS_URL skips discovery", async () => {
    const key = await newSigningKey("key-1", "ES256");
    const issuer = fakeIssuer([key]);
    issuer.state.discovery = { issuer: "https://nobody", jwks_uri: "https://nobody" };
    const source = createKeySource(
      { ...settings, jwksUrl: `${ISSUER}/certs` },
      { registry: new Registry(), metricPrefix: "entitlement_auth", log: silentLogger, fetch: issuer.fetcher },
    );
    const verify = createJwtAuthenticator(settings, source);
    expect(reason(await verify(await sign(key, claims())))).toBe("accepted");
  });
});
