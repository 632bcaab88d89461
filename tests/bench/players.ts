// The players' live streams under load (docs/benchmarks.md "Players"): N open streams on one Notification process,
// grants at a steady rate through Entitlement's API to random ones of those players, and for each grant the time from
// its request to its event on the player's stream; every event must arrive. Then one player misses a burst of
// notifications (bundle grants while its stream is closed) and resumes with Last-Event-ID.
import { summarize } from "./stats.ts";
import {
  epochMs,
  openStream,
  READERS_PER_PROCESS,
  type Reader,
  type ReaderPool,
  startReaders,
} from "./stream-readers.ts";

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
  /** Notification's CPU seconds so far (user and system), read around the idle minute. */
  cpuSeconds: () => number;
  /** Seconds the streams stay idle (no grants) while Notification's CPU is measured: its keep-alives and rechecks. */
  idleSeconds: number;
  progress: (line: string) => void;
};

async function post(url: string, path: string, headers: Record<string, string>, key: string, body: unknown) {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Grants at `rate` per second for `seconds` to random players; the send time of each by its SKU; answers by status. */
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
    sentAt.set(sku, epochMs());
    const grant = { user_id: user, stock_keeping_unit: sku, reason: "bench", purchase_id: sku };
    inFlight.push(post(args.entitlementUrl, "/v1/entitlements/grants", args.headers, sku, grant));
  }
  const statuses: Record<string, number> = {};
  for (const status of await Promise.all(inFlight)) statuses[status] = (statuses[status] ?? 0) + 1;
  return statuses;
}

/** Where the streams' memory is read: at 5,000 (beyond the process's warm-up) and at the full count. */
const checkpoints = (streams: number) => [...new Set([Math.min(5_000, streams), streams])];

/**
 * Opens the streams in steps, Notification's RSS read before any and after each step (2 s after the last open), then
 * leaves them idle for `idleSeconds` and measures Notification's CPU over that time.
 */
async function openAndIdle(args: PlayerStreamsArgs, players: string[], pool: ReaderPool) {
  const rss = [{ streams: 0, mb: args.rssMb() }];
  let opened = 0;
  for (const step of checkpoints(players.length)) {
    args.progress(`players: opening streams ${opened + 1}–${step}`);
    const tokens = await Promise.all(players.slice(opened, step).map((p) => args.tokenFor(p)));
    await pool.open(args.notificationUrl, tokens);
    opened = step;
    await Bun.sleep(2_000);
    rss.push({ streams: step, mb: args.rssMb() });
  }
  args.progress(`players: ${opened} streams idle for ${args.idleSeconds}s, Notification's CPU measured`);
  const cpuBefore = args.cpuSeconds();
  const idleStarted = performance.now();
  await Bun.sleep(args.idleSeconds * 1_000);
  const idleCpuShare = (args.cpuSeconds() - cpuBefore) / ((performance.now() - idleStarted) / 1_000);
  return { rss, idleCpuShare };
}

/** KB per stream from RSS at 0 to N streams, and from the first checkpoint to N (the process's warm-up left out). */
function perStreamKb(rss: { streams: number; mb: number }[]) {
  const [zero, first, last] = [rss[0], rss[1], rss.at(-1)];
  const kb = (a = zero, b = last) =>
    a && b && b.streams > a.streams ? ((b.mb - a.mb) * 1024) / (b.streams - a.streams) : NaN;
  return { fromZero: kb(zero, last), beyondFirst: rss.length > 2 ? kb(first, last) : Number.NaN };
}

export async function measurePlayerStreams(args: PlayerStreamsArgs) {
  const players = Array.from({ length: args.streams }, (_, i) => `player-${args.tag}-${i}`);
  const arrived = new Map<string, number>();
  const pool = startReaders(Math.ceil(args.streams / READERS_PER_PROCESS), (sku, at) => {
    if (!arrived.has(sku)) arrived.set(sku, at);
  });
  const harnessReaders: Reader[] = [];
  try {
    const idle = await openAndIdle(args, players, pool);
    args.progress(`players: ${args.rate} grants/s for ${args.seconds}s to random players`);
    const sentAt = new Map<string, number>();
    const statuses = await paceGrants(args, players, sentAt);
    const granted = statuses[200] ?? 0;
    const deadline = performance.now() + 30_000;
    while (arrived.size < granted && performance.now() < deadline) await Bun.sleep(100);
    const latencies = [...sentAt].flatMap(([sku, at]) => {
      const got = arrived.get(sku);
      return got === undefined ? [] : [got - at];
    });
    const within100ms = await storedToSentWithin100ms(args.notificationUrl);
    const resume = await measureResume(args, harnessReaders);
    return {
      streams: args.streams,
      readerProcesses: pool.pids.length,
      granted,
      grantStatuses: statuses,
      delivered: arrived.size,
      requestToEventMs: summarize(latencies),
      storedToSentWithin100ms: within100ms,
      rssMb: idle.rss,
      rssPerStreamKb: perStreamKb(idle.rss),
      idleCpuShare: idle.idleCpuShare,
      resume,
    };
  } finally {
    for (const reader of harnessReaders) reader.close();
    await pool.close();
  }
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
