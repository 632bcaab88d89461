// The push bench's stand-in push services, a process of their own so that their CPU is measured apart from the
// harness and Notification: `bun tests/bench/push-standin.ts count|decrypt`, printing one JSON line of its addresses.
// Two Web Push services on two origins (Notification gives each origin its own slots): a healthy one that answers
// 201, and one that never answers (every push to it hangs until Notification's timeout).
//   decrypt: the healthy one is tests/support/webpush-service.ts: every push's VAPID JWT verified and its aes128gcm
//            payload decrypted with the subscription's private key, as a browser would (costly: ECDH per push).
//   count:   the healthy one counts pushes and checks that each is aes128gcm with a TTL, and verifies the VAPID JWT
//            of one push in SAMPLE (signature under k, aud = its origin, exp at most 24 h ahead, a sub); nothing is
//            decrypted, so a stand-in's cost stays small beside the pipeline it measures.
// Control, on a third port: POST /subscribe {"n", "hanging"} makes n subscriptions (PushSubscription.toJSON()) on
// one of the two; GET /stats gives the counts and drains the arrival times (epoch ms) of healthy pushes.
import { createECDH, randomBytes, randomUUID } from "node:crypto";
import { startWebPushService, verifyVapid } from "../support/webpush-service.ts";

export const SAMPLE = 100;

type Subscription = { endpoint: string; expirationTime: null; keys: { p256dh: string; auth: string } };
type Healthy = {
  origin: string;
  subscribe: () => Subscription;
  stats: () => { count: number; checked: number; refused: string[] };
  drain: () => number[];
};

const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");

/** Keys for subscriptions that are never decrypted: a few real P-256 points, shared (the endpoint names the device). */
const KEY_POOL = Array.from({ length: 32 }, () => {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  return b64u(ecdh.getPublicKey());
});

/** A new browser's subscription on the service at `origin`, with the public key `p256dh` and a fresh auth secret. */
function subscriptionOn(origin: string, p256dh: string): Subscription {
  return {
    endpoint: `${origin}/push/${randomUUID()}`,
    expirationTime: null,
    keys: { p256dh, auth: b64u(randomBytes(16)) },
  };
}

function countingService(): Healthy {
  let count = 0;
  let checked = 0;
  let made = 0;
  const refused: string[] = [];
  let arrivals: number[] = [];
  const check = async (request: Request, sampled: boolean) => {
    if (request.headers.get("content-encoding") !== "aes128gcm") throw new Error("Content-Encoding is not aes128gcm");
    if (!/^\d+$/.test(request.headers.get("ttl") ?? "")) throw new Error("no TTL header");
    if (sampled) await verifyVapid(request.headers.get("authorization"), origin);
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: async (request) => {
      await request.arrayBuffer();
      const sampled = count % SAMPLE === 0;
      count += 1;
      try {
        await check(request, sampled);
        if (sampled) checked += 1;
      } catch (error) {
        refused.push(error instanceof Error ? error.message : String(error));
        return new Response("refused", { status: 400 });
      }
      arrivals.push(Date.now());
      return new Response(null, { status: 201 });
    },
  });
  const origin = `http://127.0.0.1:${server.port}`;
  return {
    origin,
    subscribe: () => subscriptionOn(origin, KEY_POOL[made++ % KEY_POOL.length] as string),
    stats: () => ({ count, checked, refused: refused.slice(0, 3) }),
    drain: () => {
      const out = arrivals;
      arrivals = [];
      return out;
    },
  };
}

function decryptingService(): Healthy {
  const service = startWebPushService({ record: true });
  let drained = 0;
  return {
    origin: service.origin,
    subscribe: () => service.subscribe().json,
    stats: () => ({
      count: [...service.requests.values()].reduce((a, b) => a + b, 0),
      checked: service.received.length,
      refused: service.refused.slice(0, 3),
    }),
    drain: () => {
      const out = service.received.slice(drained).map((p) => performance.timeOrigin + p.at);
      drained = service.received.length;
      return out;
    },
  };
}

/** A push service that takes every request and never answers it; how many it holds is counted. */
function hangingService(): { origin: string; subscribe: () => Subscription; requests: () => number } {
  let requests = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: () => {
      requests += 1;
      return new Promise<Response>(() => {});
    },
  });
  const origin = `http://127.0.0.1:${server.port}`;
  return {
    origin,
    subscribe: () => subscriptionOn(origin, KEY_POOL[0] as string),
    requests: () => requests,
  };
}

function main(mode: string): void {
  if (mode !== "count" && mode !== "decrypt") throw new Error(`push-standin: count or decrypt, not '${mode}'`);
  const healthy = mode === "count" ? countingService() : decryptingService();
  const hanging = hangingService();
  const control = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/stats") {
        return Response.json({ ...healthy.stats(), hanging: hanging.requests(), arrivals: healthy.drain() });
      }
      if (path !== "/subscribe" || request.method !== "POST") return new Response("not found", { status: 404 });
      const { n, hanging: toHanging } = (await request.json()) as { n: number; hanging?: boolean };
      const make = toHanging ? hanging.subscribe : healthy.subscribe;
      return Response.json(Array.from({ length: n }, () => make()));
    },
  });
  const addresses = {
    mode,
    healthy: healthy.origin,
    hanging: hanging.origin,
    control: `http://127.0.0.1:${control.port}`,
  };
  console.log(JSON.stringify(addresses));
}

if (import.meta.main) main(process.argv[2] ?? "count");
