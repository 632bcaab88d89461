// The players' side without I/O: its configuration (the same trust rules as Entitlement's JWT callers, under its own
// prefix), the text of the event stream and the resume point it accepts, and who a token names.
import { describe, expect, test } from "bun:test";
import { importJWK, SignJWT } from "jose";
import { loadNotificationConfig } from "../../../src/notification/config.ts";
import { createPlayerAuthenticator } from "../../../src/notification/edge/player-auth.ts";
import { keepAliveAll, STREAMS_PER_TURN } from "../../../src/notification/features/players/hub.ts";
import { streamsWithinOpenFiles } from "../../../src/notification/features/players/setup.ts";
import { notificationFrame, resetFrame, resumePoint } from "../../../src/notification/features/players/sse.ts";
import type { KeySource } from "../../../src/shared/auth/jwks.ts";
import type { Refusal } from "../../../src/shared/auth/refusal.ts";
import type { Logger } from "../../../src/shared/logger.ts";
import { configProblems } from "../../support/captures.ts";
import { newSigningKey } from "../../support/signing-key.ts";

const ISSUER = "https://idp.example.com/realms/game";

describe("configuration", () => {
  test("without an issuer the players' routes are off; the stream bounds have their defaults", () => {
    const players = loadNotificationConfig({}).players;
    expect(players.jwt).toBeUndefined();
    expect(players.stream).toEqual({
      heartbeatMs: 15_000,
      maxPerUser: 5,
      max: 20_000,
      bufferBytes: 262_144,
      recheckMs: 5_000,
    });
    expect(players.subject).toBe("notification.players");
  });

  test("the stream limit stays below the open-file limit, less the descriptors the process needs besides", () => {
    const stream = loadNotificationConfig({}).players.stream;
    const warned: unknown[] = [];
    const log = { warn: (...args: unknown[]) => warned.push(args) } as unknown as Logger;
    expect(streamsWithinOpenFiles(stream, 20_000, log), "each stream takes a descriptor").toEqual({
      ...stream,
      max: 19_000,
    });
    expect(warned, "the lowered limit is said once, at boot").toHaveLength(1);
    expect(streamsWithinOpenFiles(stream, 1_048_576, log)).toBe(stream);
    expect(streamsWithinOpenFiles(stream, undefined, log), "no limit known (not Linux, unlimited)").toBe(stream);
    expect(streamsWithinOpenFiles(stream, 800, log).max, "a tiny limit still serves one stream").toBe(1);
    expect(warned).toHaveLength(2);
  });

  test("an issuer needs an audience, and both URLs must be https (http on loopback only)", () => {
    expect(configProblems(() => loadNotificationConfig({ NOTIFICATION_PLAYER_JWT_ISSUER: ISSUER }))).toEqual([
      expect.stringContaining(
        "NOTIFICATION_PLAYER_JWT_AUDIENCE is required when NOTIFICATION_PLAYER_JWT_ISSUER is set",
      ),
    ]);
    const plain = configProblems(() =>
      loadNotificationConfig({
        NOTIFICATION_PLAYER_JWT_ISSUER: "http://idp.example.com",
        NOTIFICATION_PLAYER_JWT_AUDIENCE: "game",
        NOTIFICATION_PLAYER_JWT_JWKS_URL: "http://keys.example.com/jwks",
      }),
    );
    expect(plain).toHaveLength(2);
    expect(configProblems(() => loadNotificationConfig({ NOTIFICATION_PLAYER_JWT_AUDIENCE: "game" }))[0]).toContain(
      "NOTIFICATION_PLAYER_JWT_AUDIENCE is set but NOTIFICATION_PLAYER_JWT_ISSUER is not",
    );
  });

  test("with an issuer: the trust, the user claim and the cooldown", () => {
    const players = loadNotificationConfig({
      NOTIFICATION_PLAYER_JWT_ISSUER: ISSUER,
      NOTIFICATION_PLAYER_JWT_AUDIENCE: "game",
      NOTIFICATION_PLAYER_JWT_USER_CLAIM: "preferred_username",
    }).players;
    expect(players.jwt).toEqual({
      issuer: ISSUER,
      audience: "game",
      jwksUrl: undefined,
      cooldownMs: 30_000,
      userClaim: "preferred_username",
    });
  });
});

describe("the event stream's text", () => {
  const item = {
    notification_id: "0b7f3f4e-58c4-4a51-9a0b-8f0a3b1f7c11",
    seq: 7,
    type: "EntitlementGranted",
    occurred_at: "2026-01-01T00:00:00.000Z",
    created_at: "2026-01-01T00:00:00.010Z",
    read_at: null,
    payload: { note: "two\nlines" },
  };

  test("a notification is one frame: its seq as id, one data line (JSON escapes every newline)", () => {
    const text = new TextDecoder().decode(notificationFrame(item));
    expect(text).toBe(`id: 7\nevent: notification\ndata: ${JSON.stringify(item)}\n\n`);
    expect(text.split("\n").filter((l) => l.startsWith("data: "))).toHaveLength(1);
  });

  test("a reset names the latest seq", () => {
    expect(new TextDecoder().decode(resetFrame("42"))).toBe('event: reset\ndata: {"last_seq":42}\n\n');
  });

  test("the resume point: the header first, else the parameter; digits only", () => {
    expect(resumePoint(null, undefined)).toBeUndefined();
    expect(resumePoint("12", "3")).toBe("12");
    expect(resumePoint(null, "3")).toBe("3");
    expect(resumePoint("0", undefined)).toBe("0");
    for (const bad of ["-1", "1.5", "x", "01", "9".repeat(19)]) expect(() => resumePoint(bad, undefined)).toThrow();
  });

  test("a resume point beyond the largest seq a client can name is refused, naming what was sent and the rule", () => {
    expect(resumePoint(String(Number.MAX_SAFE_INTEGER), undefined)).toBe("9007199254740991");
    const rule = "must be a seq: an integer from 0 to 9007199254740991";
    expect(() => resumePoint("9007199254740992", undefined)).toThrow(`Last-Event-ID ${rule}`);
    expect(() => resumePoint(null, "1e20")).toThrow(`last_event_id ${rule}`);
    expect(() => resumePoint(null, "9".repeat(30))).toThrow(`last_event_id ${rule}`);
  });
});

describe("who a token names", () => {
  test("the configured claim is the user_id; a token without it is refused as having no caller", async () => {
    const key = await newSigningKey("k1");
    const publicKey = (await importJWK(key.publicJwk, key.alg)) as CryptoKey;
    const keys: KeySource = {
      key: async () => publicKey,
      refresh: async () => {},
      refreshIfStale: () => {},
      generation: () => 1,
    };
    const refusals: Refusal[] = [];
    const trust = { issuer: ISSUER, audience: "game", jwksUrl: undefined, cooldownMs: 30_000, userClaim: "player_id" };
    const authenticate = createPlayerAuthenticator(trust, keys, (r) => refusals.push(r));
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT({ iss: ISSUER, aud: "game", exp: Math.floor(Date.now() / 1000) + 60, ...claims })
        .setProtectedHeader({ alg: key.alg, kid: key.kid })
        .sign(key.privateKey);
    const player = await authenticate(`Bearer ${await sign({ sub: "account-1", player_id: "p-77" })}`);
    expect(player.userId).toBe("p-77");
    await expect(authenticate(`Bearer ${await sign({ sub: "account-1" })}`)).rejects.toMatchObject({ status: 401 });
    await expect(authenticate("Bearer opaque-token")).rejects.toMatchObject({ status: 401 });
    expect(refusals.map((r) => r.refused)).toEqual(["no_caller", "malformed"]);
  });
});

describe("the keep-alive pass", () => {
  test("gives the event loop back every few hundred streams, and reaches every silent stream once", async () => {
    const players = 3 * STREAMS_PER_TURN + 7;
    const calls = new Map<string, number>();
    const byUser = new Map<string, Set<{ keepAlive: (idleMs: number, now: number) => void }>>();
    for (let i = 0; i < players; i++) {
      const userId = `p-${i}`;
      // Two streams for every tenth player: the pass counts streams, not players.
      const streams = Array.from({ length: i % 10 === 0 ? 2 : 1 }, (_, n) => ({
        keepAlive: () => calls.set(`${userId}/${n}`, (calls.get(`${userId}/${n}`) ?? 0) + 1),
      }));
      byUser.set(userId, new Set(streams));
    }
    let seenByAnotherTask: number | undefined;
    // Queued before the pass starts: it runs as soon as the pass gives the loop back, and sees how far it got.
    setImmediate(() => {
      seenByAnotherTask = calls.size;
    });
    await keepAliveAll(byUser, 10_000);
    expect(seenByAnotherTask, "another task ran after the first turn's streams, not after all of them").toBe(
      STREAMS_PER_TURN,
    );
    const streams = players + Math.ceil(players / 10);
    expect(calls.size).toBe(streams);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
  });
});
