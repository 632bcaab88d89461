// What `bun run stack` gives the services and says about it: every setting it makes is printed with why; the user's own
// value wins where the stack can do without its own, is joined with the stack's token, or is replaced with the reason;
// secrets never reach the terminal. And its player token's lifetime, down to an already expired one, checked as the
// services check it (their clock tolerance included).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { CLOCK_TOLERANCE_S } from "../../src/shared/auth/jwt.ts";
import { UsageError } from "../../src/shared/cli-args.ts";
import {
  commonStackSettings,
  entitlementStackSettings,
  notificationStackSettings,
  settleSettings,
} from "../../tools/stack-settings.ts";
import { stackVapidKeys, startDemoIssuer } from "../../tools/stack-standins.ts";
import { DEFAULT_PLAYER_TOKEN_TTL_MS, parseStackArgs } from "../../tools/stack-usage.ts";

const common = commonStackSettings({
  databaseUrl: "postgres://stack:pw@127.0.0.1:5432/entitlement_stack",
  natsUrl: "nats://127.0.0.1:4222",
  port: 8081,
  nats: { NOTIFICATION_NATS_STREAM: "stack-events" },
});
const VAPID = { publicKey: `B${"p".repeat(86)}`, privateKey: "vapid-private-of-the-stack" };
const notificationInputs = {
  debugToken: "dbg_stack",
  adminToken: "admin-token-of-the-stack",
  notifyToken: "notify-token-of-the-stack",
  issuer: { issuer: "http://127.0.0.1:1", audience: "stack-players" },
  secretKey: "k".repeat(64),
  pageOrigin: "http://127.0.0.1:2",
  vapid: VAPID,
};
const notification = notificationStackSettings(common, notificationInputs);
const issuer = await startDemoIssuer();
afterAll(() => issuer.stop());
const keys = createRemoteJWKSet(new URL(`${issuer.issuer}/jwks`));
const verify = (token: string) =>
  jwtVerify(token, keys, {
    issuer: issuer.issuer,
    audience: issuer.audience,
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: ["exp"],
  });

const line = (lines: string[], name: string) => lines.find((l) => l.startsWith(`${name}=`));

describe("the settings the stack gives the services", () => {
  test("without values of your own: every setting is printed, with why, secrets hidden", () => {
    const { env, lines } = settleSettings(notification, {});
    expect(Object.keys(env).sort()).toEqual(Object.keys(notification).sort());
    expect(lines.length, "one line per setting").toBe(Object.keys(notification).length);
    expect(line(lines, "NOTIFICATION_ENDPOINT_ALLOW_PRIVATE")).toStartWith(
      "NOTIFICATION_ENDPOINT_ALLOW_PRIVATE=true  (the demo receiver listens on 127.0.0.1",
    );
    expect(line(lines, "NOTIFICATION_AUTH_TOKENS")).toStartWith("NOTIFICATION_AUTH_TOKENS=***");
    expect(line(lines, "DATABASE_URL")).toBe(
      "DATABASE_URL=postgres://stack:***@127.0.0.1:5432/entitlement_stack  (the stack's database)",
    );
    for (const printed of lines) {
      expect(printed).not.toMatch(
        /admin-token-of-the-stack|notify-token-of-the-stack|dbg_stack|kkkk|:pw@|vapid-private/,
      );
    }
    expect(line(lines, "NOTIFICATION_PLAYER_CORS_ORIGINS"), "the player page's origin may call /v1/me/").toStartWith(
      "NOTIFICATION_PLAYER_CORS_ORIGINS=http://127.0.0.1:2  (the player page",
    );
  });

  test("your own values win where they can, and the line says so", () => {
    const yours = {
      NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "false",
      NOTIFICATION_DEBUG_API_TOKEN: "my-own-debug-token",
      NOTIFICATION_ENDPOINT_SECRET_KEY: "m".repeat(64),
    };
    const { env, lines } = settleSettings(notification, yours);
    expect(env).toMatchObject(yours);
    expect(line(lines, "NOTIFICATION_ENDPOINT_ALLOW_PRIVATE")).toStartWith(
      "NOTIFICATION_ENDPOINT_ALLOW_PRIVATE=false  (yours; the stack would set true:",
    );
    expect(line(lines, "NOTIFICATION_DEBUG_API_TOKEN")).toStartWith("NOTIFICATION_DEBUG_API_TOKEN=***  (yours;");
  });

  test("your token lists keep their tokens and gain the stack's", () => {
    const { env, lines } = settleSettings(entitlementStackSettings(common, "ent_api"), {
      ENTITLEMENT_AUTH_TOKENS: "mine:sha256:abc:read",
    });
    expect(env.ENTITLEMENT_AUTH_TOKENS).toStartWith("mine:sha256:abc:read,stack:");
    expect(line(lines, "ENTITLEMENT_AUTH_TOKENS")).toBe(
      "ENTITLEMENT_AUTH_TOKENS=yours + the stack's entry  (the API token below)",
    );
  });

  test("what the stack cannot leave to you is replaced, and the line says why", () => {
    const { env, lines } = settleSettings(notification, {
      DATABASE_URL: "postgres://me@127.0.0.1:5432/postgres",
      NOTIFICATION_PLAYER_JWT_ISSUER: "https://id.example.com",
      HOST: "0.0.0.0",
    });
    expect(env.DATABASE_URL).toBe("postgres://stack:pw@127.0.0.1:5432/entitlement_stack");
    expect(env.NOTIFICATION_PLAYER_JWT_ISSUER).toBe("http://127.0.0.1:1");
    expect(line(lines, "DATABASE_URL")).toContain("(replaces yours: the stack's state is a database of its own)");
    expect(line(lines, "NOTIFICATION_PLAYER_JWT_ISSUER")).toContain("(replaces yours: PLAYER_TOKEN is signed by");
    expect(line(lines, "HOST")).toBe(
      "HOST=127.0.0.1  (replaces yours: the stack's tokens and demo issuer are for this machine only)",
    );
  });
});

describe("Web Push in the stack", () => {
  test("on with the stack's VAPID pair and a subject; the keys are never printed", () => {
    const { env, lines } = settleSettings(notification, {});
    expect(env.NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY).toBe(VAPID.publicKey);
    expect(env.NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY).toBe(VAPID.privateKey);
    expect(env.NOTIFICATION_WEBPUSH_SUBJECT).toMatch(/^mailto:/);
    expect(line(lines, "NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY")).toStartWith(
      "NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY=***  (the stack's VAPID pair, kept in its data folder",
    );
  });

  test("when your environment brings a VAPID key, the stack sets none of the three", () => {
    const yours = notificationStackSettings(common, { ...notificationInputs, vapid: undefined });
    expect(Object.keys(yours).filter((name) => name.startsWith("NOTIFICATION_WEBPUSH_"))).toEqual([]);
  });

  test("the pair is made once with web-push, kept owner-only in the data folder, and the same on the next run", () => {
    const dir = mkdtempSync(join(tmpdir(), "stack-vapid-"));
    const other = mkdtempSync(join(tmpdir(), "stack-vapid-"));
    try {
      const first = stackVapidKeys(dir);
      expect(Buffer.from(first.publicKey, "base64url").length, "an uncompressed P-256 point").toBe(65);
      expect(Buffer.from(first.privateKey, "base64url").length).toBe(32);
      expect(statSync(join(dir, "webpush-vapid.json")).mode & 0o777).toBe(0o600);
      expect(stackVapidKeys(dir), "kept: browsers subscribed in an earlier run still receive").toEqual(first);
      expect(stackVapidKeys(other).publicKey, "made per data folder").not.toBe(first.publicKey);
      expect(JSON.parse(readFileSync(join(dir, "webpush-vapid.json"), "utf8"))).toEqual(first);
    } finally {
      for (const d of [dir, other]) rmSync(d, { recursive: true, force: true });
    }
  });
});

describe("--player-token-ttl", () => {
  test("takes a duration, 0 or a negative one; anything else says what was wrong", () => {
    expect(parseStackArgs([]).playerTokenTtlMs).toBe(DEFAULT_PLAYER_TOKEN_TTL_MS);
    expect(parseStackArgs(["--player-token-ttl", "30s"]).playerTokenTtlMs).toBe(30_000);
    expect(parseStackArgs(["--player-token-ttl", "0"]).playerTokenTtlMs).toBe(0);
    expect(parseStackArgs(["--player-token-ttl", "-1m"]).playerTokenTtlMs).toBe(-60_000);
    expect(() => parseStackArgs(["--player-token-ttl", "soon"])).toThrow(UsageError);
    expect(() => parseStackArgs(["--player-token-ttl"])).toThrow("flag --player-token-ttl needs a value");
    expect(() => parseStackArgs(["--rest"])).toThrow("unknown flag '--rest'");
    expect(parseStackArgs(["--reset"]).reset).toBe(true);
  });

  test("a token of 30 s expires then; one of 0 or less is refused at once, past the clock tolerance", async () => {
    const short = await issuer.tokenFor("u_demo", 30_000);
    expect(Math.abs(short.expiresAt.getTime() - (Date.now() + 30_000))).toBeLessThan(2_000);
    expect((await verify(short.token)).payload.sub).toBe("u_demo");
    for (const ttl of [0, -60_000]) {
      const expired = await issuer.tokenFor("u_demo", ttl);
      expect(expired.expiresAt.getTime(), `ttl ${ttl}: expired`).toBeLessThan(Date.now() - CLOCK_TOLERANCE_S * 1_000);
      await expect(verify(expired.token), `ttl ${ttl}: refused`).rejects.toThrow(/"exp" claim timestamp check failed/);
    }
  });
});
