// The players' live streams under load (docs/benchmarks.md "Players"): N open streams on one Notification process,
// grants at a steady rate through Entitlement's API to random ones of those players, and for each grant the time from
// its request to its event on the player's stream; every event must arrive. Then one player misses a burst of
// notifications (bundle grants while its stream is closed) and resumes with Last-Event-ID.
import { summarize } from "./stats.ts";

export type PlayerStreamsArgs = {
  entitlementUrl: string;
  notificationUrl: string;
  headers: Record<string, string>;
  /** A player's access token for the players' issuer. */
  tokenFor: (userId: string) => Promise<string>;
  streams: number;
  rate: number;
  seconds: number;
  resume: number;
  tag: string;
  /** Notification's resident memory in MiB, read before and after the streams open. */
  rssMb: () => number;
  progress: (line: string) => void;
};

type Reader = { close: () => void };
type OnEvent = (seq: number, data: string) => void;

/** Opens one stream and calls back for each notification event; resolves once the response headers are in. */
async function openStream(url: string, token: string, handle: OnEvent, lastEventId?: string): Promise<Reader> {
  const abort = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
  const response = await fetch(`${url}/v1/me/notifications/stream`, { headers, signal: abort.signal });
  if (response.status !== 200 || !response.body) throw new Error(`a stream was refused: ${response.status}`);
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = /^id: (\d+)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (id && data && frame.includes("event: notification")) handle(Number(id), data);
        }
      }
    } catch {
      // closed by the harness
    }
  })();
  return { close: () => abort.abort() };
}

async function post(url: string, path: string, headers: Record<string, string>, key: string, body: unknown) {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Grants at `rate` per second for `seconds` to random players; the send time of each by its SKU. */
async function paceGrants(args: PlayerStreamsArgs, players: string[], sentAt: Map<string, number>) {
  const total = Math.round(args.rate * args.seconds);
  const started = performance.now();
  const inFlight: Promise<number>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / args.rate;
    const wait = due - performance.now();
    if (wait > 0) await Bun.sleep(wait);
    const sku = `live-${args.tag}-${i}`;
    const user = players[Math.floor(Math.random() * players.length)] as string;
    sentAt.set(sku, performance.now());
    const grant = { user_id: user, stock_keeping_unit: sku, reason: "bench", purchase_id: sku };
    inFlight.push(post(args.entitlementUrl, "/v1/entitlements/grants", args.headers, sku, grant));
  }
  const statuses = await Promise.all(inFlight);
  return statuses.filter((s) => s === 200).length;
}

export async function measurePlayerStreams(args: PlayerStreamsArgs) {
  const players = Array.from({ length: args.streams }, (_, i) => `player-${args.tag}-${i}`);
  const rssBefore = args.rssMb();
  const readers: Reader[] = [];
  const arrived = new Map<string, number>();
  args.progress(`players: opening ${args.streams} streams`);
  const onEvent: OnEvent = (_seq, data) => {
    const sku = (JSON.parse(data) as { payload: { stock_keeping_unit?: string } }).payload.stock_keeping_unit;
    if (sku && !arrived.has(sku)) arrived.set(sku, performance.now());
  };
  for (let i = 0; i < players.length; i += 100) {
    const batch = players.slice(i, i + 100);
    readers.push(
      ...(await Promise.all(batch.map(async (p) => openStream(args.notificationUrl, await args.tokenFor(p), onEvent)))),
    );
  }
  await Bun.sleep(2_000);
  const rssOpen = args.rssMb();
  args.progress(`players: ${args.rate} grants/s for ${args.seconds}s to random players`);
  const sentAt = new Map<string, number>();
  const granted = await paceGrants(args, players, sentAt);
  const deadline = performance.now() + 30_000;
  while (arrived.size < granted && performance.now() < deadline) await Bun.sleep(100);
  const latencies = [...sentAt].flatMap(([sku, at]) => {
    const got = arrived.get(sku);
    return got === undefined ? [] : [got - at];
  });
  const within100ms = await storedToSentWithin100ms(args.notificationUrl);
  const resume = await measureResume(args, readers);
  for (const reader of readers) reader.close();
  return {
    streams: args.streams,
    granted,
    delivered: arrived.size,
    requestToEventMs: summarize(latencies),
    storedToSentWithin100ms: within100ms,
    rssPerStreamKb: ((rssOpen - rssBefore) * 1024) / Math.max(1, args.streams),
    resume,
  };
}

/** One player misses `resume` notifications (bundle grants of 100 while its stream is closed), then resumes. */
async function measureResume(args: PlayerStreamsArgs, readers: Reader[]) {
  const player = `resumer-${args.tag}`;
  const token = await args.tokenFor(player);
  (await openStream(args.notificationUrl, token, () => {})).close();
  args.progress(`players: ${args.resume} notifications missed by one player, then a resume`);
  for (let i = 0; i < args.resume; i += 100) {
    const skus = Array.from({ length: Math.min(100, args.resume - i) }, (_, j) => `missed-${args.tag}-${i + j}`);
    const body = { user_id: player, stock_keeping_units: skus, reason: "bench", purchase_id: `m-${i}` };
    await post(args.entitlementUrl, "/v1/entitlements/bundle-grants", args.headers, `m-${args.tag}-${i}`, body);
  }
  // Stored first (a resume measures the replay, not the pipeline): the summary's last_seq says how far it went.
  const stored = async () => {
    const r = await fetch(`${args.notificationUrl}/v1/me/notifications/summary`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return ((await r.json()) as { last_seq: number }).last_seq;
  };
  const deadline = performance.now() + 60_000;
  while ((await stored()) < args.resume && performance.now() < deadline) await Bun.sleep(100);
  const started = performance.now();
  let received = 0;
  const done = Promise.withResolvers<void>();
  const onEvent = () => {
    received += 1;
    if (received === args.resume) done.resolve();
  };
  readers.push(await openStream(args.notificationUrl, token, onEvent, "0"));
  await Promise.race([done.promise, Bun.sleep(30_000)]);
  return { missed: args.resume, received, ms: performance.now() - started };
}

/** The share of stream events sent within 100 ms of their storing, from Notification's own histogram. */
export async function storedToSentWithin100ms(notificationUrl: string): Promise<number> {
  const text = await (await fetch(`${notificationUrl}/metrics`)).text();
  const bucket = (le: string) =>
    Number(
      new RegExp(
        `^notification_player_stream_delay_seconds_bucket\\{[^}]*le="${le.replace(/[.+]/g, "\\$&")}"[^}]*\\} (\\S+)$`,
        "m",
      ).exec(text)?.[1] ?? 0,
    );
  const all = bucket("+Inf");
  return all === 0 ? Number.NaN : bucket("0.1") / all;
}
