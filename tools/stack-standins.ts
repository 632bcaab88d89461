// The stand-ins `bun run stack` runs beside the services, for trying things locally only. A players' OpenID Connect
// provider: a signing key made for this run, its discovery document and key set on a loopback port, and access tokens
// for the demo user, so the players' inbox and live stream (and docs/examples/player.html) work without an identity
// provider (never for production: whoever runs the stack can sign any player's token). A webhook receiver that
// answers every delivery, so an endpoint registered with the admin API has somewhere to deliver.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { CLOCK_TOLERANCE_S } from "../src/shared/auth/jwt.ts";

export type DemoIssuer = {
  issuer: string;
  audience: string;
  /**
   * An access token for `userId` (its `sub`) that expires `ttlMs` from now; 0 or less gives one the services already
   * refuse: its expiry that long ago and past their clock tolerance.
   */
  tokenFor: (userId: string, ttlMs: number) => Promise<{ token: string; expiresAt: Date }>;
  stop: () => void;
};

const AUDIENCE = "stack-players";
const KID = "stack-1";

export async function startDemoIssuer(): Promise<DemoIssuer> {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk = { ...(await exportJWK(publicKey)), kid: KID, alg: "ES256", use: "sig" };
  let issuer = "";
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/.well-known/openid-configuration") return Response.json({ issuer, jwks_uri: `${issuer}/jwks` });
      if (path === "/jwks") return Response.json({ keys: [jwk] });
      return new Response("not found", { status: 404 });
    },
  });
  issuer = `http://127.0.0.1:${server.port}`;
  return {
    issuer,
    audience: AUDIENCE,
    tokenFor: async (userId, ttlMs) => {
      const toleranceMs = ttlMs > 0 ? 0 : (CLOCK_TOLERANCE_S + 1) * 1_000;
      const expiresAt = new Date(Math.floor((Date.now() + ttlMs - toleranceMs) / 1_000) * 1_000);
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: "ES256", kid: KID, typ: "at+jwt" })
        .setIssuer(issuer)
        .setAudience(AUDIENCE)
        .setSubject(userId)
        .setIssuedAt()
        .setExpirationTime(expiresAt)
        .sign(privateKey);
      return { token, expiresAt };
    },
    stop: () => void server.stop(true),
  };
}

/** A webhook receiver for the stack's demo endpoints: it answers 204 to every delivery and counts them. */
export type DemoReceiver = { url: string; received: () => number; stop: () => void };

export function startDemoReceiver(): DemoReceiver {
  let received = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      await request.arrayBuffer();
      received += 1;
      return new Response(null, { status: 204 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hooks`,
    received: () => received,
    stop: () => void server.stop(true),
  };
}

/** docs/examples/player.html on an origin of its own, which the stack lists in NOTIFICATION_PLAYER_CORS_ORIGINS. */
export type PlayerPage = { origin: string; stop: () => void };

export function servePlayerPage(page: string): PlayerPage {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(Bun.file(page), { headers: { "content-type": "text/html; charset=utf-8" } }),
  });
  return { origin: `http://127.0.0.1:${server.port}`, stop: () => void server.stop(true) };
}

/**
 * The key that seals the stack's endpoint secrets (NOTIFICATION_ENDPOINT_SECRET_KEY), kept in the stack's data folder
 * so that endpoints registered in an earlier run can still be signed for; made on the first run.
 */
export function stackSecretKey(dataRoot: string): string {
  const file = join(dataRoot, "endpoint-secret.key");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dataRoot, { recursive: true });
  const key = randomBytes(32).toString("hex");
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}
