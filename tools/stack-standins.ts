// The stand-ins `bun run stack` runs beside the services, for trying things locally only. A players' OpenID Connect
// provider: a signing key made for this run, its discovery document and key set on a loopback port, and access tokens
// for the demo user, so the players' inbox and live stream (and docs/examples/player.html) work without an identity
// provider (never for production: whoever runs the stack can sign any player's token). A webhook receiver that
// answers every delivery, so an endpoint registered with the admin API has somewhere to deliver.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import webpush from "web-push";
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

/**
 * The example pages on an origin of their own, which the stack lists in NOTIFICATION_PLAYER_CORS_ORIGINS: `/` is
 * docs/examples/player.html; `/push.html` and its service worker `/push-worker.js` (at the origin's root, so its scope
 * is the whole origin); `/push-config.json` tells the push page what Notification does not serve: its URL and the
 * VAPID public key (the key is public; the private key never leaves the stack's settings). 127.0.0.1 is a secure
 * context, so a browser allows service workers and push here without https.
 */
export type ExamplePages = { origin: string; stop: () => void };

const PAGES: Record<string, [file: string, type: string]> = {
  "/": ["player.html", "text/html; charset=utf-8"],
  "/push.html": ["push.html", "text/html; charset=utf-8"],
  "/push-worker.js": ["push-worker.js", "text/javascript; charset=utf-8"],
};

export function serveExamplePages(
  dir: string,
  push: { api: string; vapidPublicKey: string | undefined },
): ExamplePages {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/push-config.json") {
        return Response.json({ api: push.api, vapid_public_key: push.vapidPublicKey ?? null });
      }
      const page = PAGES[path];
      if (!page) return new Response("not found", { status: 404 });
      return new Response(Bun.file(join(dir, page[0])), { headers: { "content-type": page[1] } });
    },
  });
  return { origin: `http://127.0.0.1:${server.port}`, stop: () => void server.stop(true) };
}

export type VapidKeys = { publicKey: string; privateKey: string };

/**
 * The stack's Web Push (VAPID) key pair, kept in the stack's data folder (owner-only) so that browsers subscribed in an
 * earlier run keep receiving pushes (a new pair would invalidate every subscription); made with the web-push library
 * on the first run. The file is `{"publicKey", "privateKey"}` in base64url, as `web-push generate-vapid-keys` prints.
 */
export function stackVapidKeys(dataRoot: string): VapidKeys {
  const file = join(dataRoot, "webpush-vapid.json");
  if (existsSync(file)) {
    const kept = JSON.parse(readFileSync(file, "utf8")) as Partial<VapidKeys>;
    if (typeof kept.publicKey !== "string" || typeof kept.privateKey !== "string") {
      throw new Error(`${file} has no publicKey and privateKey: remove it to make a new pair`);
    }
    return { publicKey: kept.publicKey, privateKey: kept.privateKey };
  }
  mkdirSync(dataRoot, { recursive: true });
  const keys = webpush.generateVAPIDKeys();
  writeFileSync(file, `${JSON.stringify(keys)}\n`, { mode: 0o600 });
  return keys;
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
