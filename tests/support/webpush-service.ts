// A stand-in for a browser's push service (RFC 8030) that checks each push as a real one and the browser would: the
// VAPID JWT of RFC 8292 (ES256 under the key `k`, `aud` = this service's origin, `exp` in the future and at most 24 h
// ahead, a `sub`), and the aes128gcm payload of RFC 8291, decrypted with the subscription's private key. Subscriptions
// are made here as a browser makes them: a P-256 key pair and a 16-byte auth secret per subscription.
import { createDecipheriv, createECDH, hkdfSync, randomBytes, randomUUID } from "node:crypto";
import { decodeProtectedHeader, importJWK, jwtVerify } from "jose";

export type BrowserSubscription = {
  id: string;
  /** What PushSubscription.toJSON() gives, to register the device. */
  json: { endpoint: string; expirationTime: null; keys: { p256dh: string; auth: string } };
  privateKey: Buffer;
};

export type ReceivedPush = {
  subscriptionId: string;
  at: number;
  ttl: string | null;
  topic: string | null;
  urgency: string | null;
  bodyBytes: number;
  claims: { aud: unknown; exp: unknown; sub: unknown };
  /** The decrypted JSON. */
  message: Record<string, unknown>;
};

/** What the service answers a subscription's pushes: a status (with Retry-After), or no answer at all. */
export type Answer = { status: number; retryAfter?: string } | "hang";

const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");

/** RFC 8291 section 3.4 and RFC 8188: the key and nonce of an aes128gcm record, from the two ECDH halves. */
export function aes128gcmKeys(secret: Buffer, auth: Buffer, uaPublic: Buffer, asPublic: Buffer, salt: Buffer) {
  const keyInfo = Buffer.concat([Buffer.from("WebPush: info\0"), uaPublic, asPublic]);
  const ikm = Buffer.from(hkdfSync("sha256", secret, auth, keyInfo, 32));
  const cek = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: aes128gcm\0"), 16));
  const nonce = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: nonce\0"), 12));
  return { cek, nonce };
}

/** Decrypts one aes128gcm message (a single record) for the subscription; throws what is wrong with it. */
export function decryptPush(body: Buffer, sub: BrowserSubscription): string {
  const salt = body.subarray(0, 16);
  const idlen = body[20] as number;
  if (idlen !== 65) throw new Error(`the key id is ${idlen} bytes, not an uncompressed P-256 key`);
  const asPublic = body.subarray(21, 86);
  const ecdh = createECDH("prime256v1");
  ecdh.setPrivateKey(sub.privateKey);
  const uaPublic = Buffer.from(sub.json.keys.p256dh, "base64url");
  const auth = Buffer.from(sub.json.keys.auth, "base64url");
  const { cek, nonce } = aes128gcmKeys(ecdh.computeSecret(asPublic), auth, uaPublic, asPublic, salt);
  const record = body.subarray(86);
  const decipher = createDecipheriv("aes-128-gcm", cek, nonce);
  decipher.setAuthTag(record.subarray(record.length - 16));
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error("the last record's padding delimiter is not 2");
  return padded.subarray(0, end).toString("utf8");
}

/** Checks `vapid t=<jwt>, k=<key>`; returns the JWT's claims or throws why it is refused. */
export async function verifyVapid(authorization: string | null, origin: string) {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization ?? "");
  if (!match) throw new Error("no vapid Authorization");
  const [, jwt, k] = match as unknown as [string, string, string];
  const raw = Buffer.from(k, "base64url");
  if (raw.length !== 65 || raw[0] !== 4) throw new Error("k is not an uncompressed P-256 public key");
  if (decodeProtectedHeader(jwt).alg !== "ES256") throw new Error("the JWT is not ES256");
  const jwk = { kty: "EC", crv: "P-256", x: b64u(raw.subarray(1, 33)), y: b64u(raw.subarray(33)) };
  const key = await importJWK(jwk, "ES256");
  const { payload } = await jwtVerify(jwt, key, { audience: origin, algorithms: ["ES256"] });
  const nowS = Date.now() / 1000;
  if (typeof payload.exp !== "number" || payload.exp > nowS + 24 * 3600) throw new Error("exp is over 24 hours ahead");
  if (typeof payload.sub !== "string" || !/^(mailto:|https:)/.test(payload.sub)) throw new Error("sub is missing");
  return { aud: payload.aud, exp: payload.exp, sub: payload.sub };
}

export type WebPushService = {
  origin: string;
  subscribe: () => BrowserSubscription;
  received: ReceivedPush[];
  /** Pushes refused because their VAPID or encryption was wrong, with why. */
  refused: string[];
  /** Requests seen per subscription id, answered or not. */
  requests: Map<string, number>;
  answer: (subscriptionId: string, answer: Answer) => void;
  stop: () => void;
};

export function startWebPushService(options: { record?: boolean } = {}): WebPushService {
  const subscriptions = new Map<string, BrowserSubscription>();
  const answers = new Map<string, Answer>();
  const received: ReceivedPush[] = [];
  const refused: string[] = [];
  const requests = new Map<string, number>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: async (request) => {
      const id = new URL(request.url).pathname.replace(/^\/push\//, "");
      requests.set(id, (requests.get(id) ?? 0) + 1);
      const sub = subscriptions.get(id);
      if (!sub) return new Response("no such subscription", { status: 410 });
      const answer = answers.get(id);
      if (answer === "hang") return new Promise<Response>(() => {});
      try {
        const push = await checkPush(request, sub, origin);
        if (options.record !== false) received.push(push);
      } catch (error) {
        refused.push(error instanceof Error ? error.message : String(error));
        return new Response("refused", { status: 400 });
      }
      const headers: Record<string, string> = answer?.retryAfter ? { "retry-after": answer.retryAfter } : {};
      return new Response(null, { status: answer?.status ?? 201, headers });
    },
  });
  const origin = `http://127.0.0.1:${server.port}`;
  return {
    origin,
    subscribe: () => {
      const ecdh = createECDH("prime256v1");
      ecdh.generateKeys();
      const id = randomUUID();
      const json = {
        endpoint: `${origin}/push/${id}`,
        expirationTime: null,
        keys: { p256dh: b64u(ecdh.getPublicKey()), auth: b64u(randomBytes(16)) },
      };
      const sub = { id, json, privateKey: ecdh.getPrivateKey() };
      subscriptions.set(id, sub);
      return sub;
    },
    received,
    refused,
    requests,
    answer: (id, answer) => void answers.set(id, answer),
    stop: () => void server.stop(true),
  };
}

async function checkPush(request: Request, sub: BrowserSubscription, origin: string): Promise<ReceivedPush> {
  if (request.headers.get("content-encoding") !== "aes128gcm") throw new Error("Content-Encoding is not aes128gcm");
  if (!/^\d+$/.test(request.headers.get("ttl") ?? "")) throw new Error("no TTL header");
  const claims = await verifyVapid(request.headers.get("authorization"), origin);
  const body = Buffer.from(await request.arrayBuffer());
  if (body.length > 4096) throw new Error(`the body is ${body.length} bytes, over 4096`);
  const message = JSON.parse(decryptPush(body, sub)) as Record<string, unknown>;
  return {
    subscriptionId: sub.id,
    at: performance.now(),
    ttl: request.headers.get("ttl"),
    topic: request.headers.get("topic"),
    urgency: request.headers.get("urgency"),
    bodyBytes: body.length,
    claims,
    message,
  };
}
