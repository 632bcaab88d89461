// The send API under load, run by hand: `BUN_CONFIG_MAX_HTTP_REQUESTS=20000 bun tests/bench/send.ts [streams] [sends]`
// (Bun's fetch holds at most 256 requests at once by default: the 257th stream would wait), DATABASE_URL pointing at a
// PostgreSQL (its database is created and dropped here). One Notification process (from the source tree) with
// NATS off; first `sends` sends of 1,000 recipients each, four at a time, to players without streams (recipients stored
// per second); then, with `streams` player streams open, sends of 1,000 of those players each, one at a time: the time
// from each request's start to each stream's event (p50, p99), what a player sees.
import postgres from "postgres";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { startTestIdp } from "../support/idp.ts";
import { serve } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";

const STREAMS = Number(process.argv[2] ?? 5_000);
const SENDS = Number(process.argv[3] ?? 20);
const RECIPIENTS = 1_000;
const AUDIENCE = "https://bench.test";
const TOKEN = "bench-notify-token-0123456789";

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

async function send(base: string, type: string, users: string[]): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${base}/v1/notifications`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      "idempotency-key": crypto.randomUUID(),
    },
    body: JSON.stringify({ type, user_ids: users, data: { at: Date.now() } }),
  });
  if (response.status !== 202) throw new Error(`send answered ${response.status}: ${await response.text()}`);
  return started;
}

async function storedPerSecond(base: string): Promise<number> {
  const started = performance.now();
  let next = 0;
  const one = async () => {
    for (let i = next++; i < SENDS; i = next++) {
      await send(
        base,
        "BenchStore",
        Array.from({ length: RECIPIENTS }, (_, j) => `store-${i}-${j}`),
      );
    }
  };
  await Promise.all([one(), one(), one(), one()]);
  return (SENDS * RECIPIENTS) / ((performance.now() - started) / 1000);
}

/** Opens one stream per player; `seen` is told of each event's request id with the time it arrived. */
async function openStreams(base: string, tokens: string[], seen: (requestId: string, at: number) => void) {
  const abort = new AbortController();
  let open = 0;
  const openOne = async (token: string) => {
    const response = await fetch(`${base}/v1/me/notifications/stream`, {
      headers: { authorization: `Bearer ${token}` },
      signal: abort.signal,
    });
    if (response.status !== 200) throw new Error(`stream answered ${response.status}`);
    open += 1;
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        for (const m of decoder.decode(value).matchAll(/"request_id":"([^"]+)"/g))
          seen(m[1] as string, performance.now());
      }
    })();
  };
  for (let i = 0; i < tokens.length; i += 200) await Promise.all(tokens.slice(i, i + 200).map(openOne));
  await waitUntil(() => open === tokens.length, "every stream to open");
  return () => abort.abort();
}

async function main(): Promise<void> {
  const admin = postgres(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres", { max: 1 });
  const database = `bench_send_${Date.now().toString(36)}`;
  await admin.unsafe(`create database "${database}"`);
  const url = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
  url.pathname = `/${database}`;
  const idp = await startTestIdp();
  const service = serve(new URL("../../src/notification/main.ts", import.meta.url).pathname, "notification", {
    DATABASE_URL: url.toString(),
    NATS_ENABLED: "false",
    NOTIFICATION_AUTH_TOKENS: tokenEntryLine("bench", TOKEN, "notify"),
    NOTIFICATION_ENDPOINT_SECRET_KEY: "ab".repeat(32),
    NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
    NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
    NOTIFICATION_STREAM_MAX: String(STREAMS + 100),
  });
  try {
    const base = `http://127.0.0.1:${await service.port}`;
    await waitUntil(async () => (await fetch(`${base}/readyz`)).status === 200, "readyz", 60_000);
    const stored = await storedPerSecond(base);
    console.log(`stored: ${Math.round(stored)} recipients/s (${SENDS} sends of ${RECIPIENTS}, 4 at a time)`);
    const now = Math.floor(Date.now() / 1000);
    const players = Array.from({ length: STREAMS }, (_, i) => `live-${i}`);
    const tokens = await Promise.all(
      players.map((sub) => idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub, iat: now, exp: now + 3600 })),
    );
    // One send at a time, each awaited to its last event: an event belongs to the round in flight (it may arrive
    // before the 202 does).
    let roundStart: number | undefined;
    const delays: number[] = [];
    const close = await openStreams(base, tokens, (_id, at) => {
      if (roundStart !== undefined) delays.push(at - roundStart);
    });
    const rounds = Math.max(5, Math.round(SENDS / 2));
    for (let r = 0; r < rounds; r++) {
      const users = players.slice((r * RECIPIENTS) % STREAMS).slice(0, RECIPIENTS);
      roundStart = performance.now();
      await send(base, "BenchLive", users);
      await waitUntil(() => delays.length >= (r + 1) * users.length, "every stream's event", 60_000, 20);
    }
    close();
    const sorted = delays.sort((a, b) => a - b);
    console.log(
      `request → stream event with ${STREAMS} streams open: p50 ${quantile(sorted, 0.5)?.toFixed(1)} ms, ` +
        `p99 ${quantile(sorted, 0.99)?.toFixed(1)} ms over ${sorted.length} events (${rounds} sends of ${Math.min(RECIPIENTS, STREAMS)} streaming players)`,
    );
  } finally {
    service.child.kill("SIGTERM");
    await service.output;
    await idp.close();
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
  }
}

await main();
