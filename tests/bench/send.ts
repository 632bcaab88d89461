// The send API under load (docs/benchmarks.md "The send API"), a phase of `bun run bench` and a program of its own:
// `bun tests/bench/send.ts [streams] [sends]` (DATABASE_URL names the PostgreSQL; the executables are built first,
// unless BENCH_NOTIFICATION_BINARY names one).
// One Notification executable on a database of its own, NATS off (so the streams are this process's own): first
// `sends` sends of 1,000 new recipients each, four at a time (recipients stored per second); then `streams` player
// streams open, read by a process of their own (send-readers.ts), and sends of 1,000 of those players, one at a time,
// each awaited to its last event: the time from each request's start to each stream's event (p50, p99).

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { startTestIdp, type TestIdp } from "../support/idp.ts";
import { waitUntil } from "../support/wait.ts";
import { processCpuSeconds } from "./cpu.ts";
import { type Figure, renderTable } from "./report.ts";
import { epochMs, type ReadersCommand, type ReadersReport } from "./send-readers.ts";
import * as stack from "./stack.ts";

const RECIPIENTS = 1_000;
const AUDIENCE = "https://send.bench";
const TOKEN = "bench-notify-token-0123456789";

export type SendPhase = {
  bin: stack.Binaries;
  adminUrl: string;
  tag: string;
  streams: number;
  sends: number;
  logDir: string;
  progress: (line: string) => void;
};

export type SendResult = {
  storedPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  events: number;
  rounds: number;
  /** Notification's CPU (/proc) per send while storing and while streaming: a count the machine's load moves less. */
  coreMsPerStoredSend: number;
  coreMsPerStreamedSend: number;
};

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

/** One send; resolves with its request id and the epoch milliseconds its request started. */
async function send(base: string, type: string, users: string[]): Promise<{ requestId: string; started: number }> {
  const started = epochMs();
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
  return { requestId: ((await response.json()) as { request_id: string }).request_id, started };
}

async function storedPerSecond(base: string, sends: number): Promise<number> {
  const started = performance.now();
  let next = 0;
  const one = async () => {
    for (let i = next++; i < sends; i = next++) {
      await send(
        base,
        "BenchStore",
        Array.from({ length: RECIPIENTS }, (_, j) => `store-${i}-${j}`),
      );
    }
  };
  await Promise.all([one(), one(), one(), one()]);
  return (sends * RECIPIENTS) / ((performance.now() - started) / 1000);
}

/** The readers' process, with room for every stream; `arrivals` gathers what it reports. */
function startReaders(streams: number, arrivals: [string, number][]) {
  let opened: (() => void) | undefined;
  let failed: ((error: Error) => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    opened = resolve;
    failed = reject;
  });
  const child: Subprocess = Bun.spawn([process.execPath, join(import.meta.dir, "send-readers.ts")], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: String(streams + 256) },
    stdio: ["ignore", "inherit", "inherit"],
    ipc: (report: ReadersReport) => {
      if ("opened" in report) opened?.();
      else if ("failed" in report) failed?.(new Error(`the stream readers failed: ${report.failed}`));
      else arrivals.push(...report.arrivals);
    },
  });
  const tell = (command: ReadersCommand) => child.send(command);
  return { ready, tell, exited: child.exited };
}

/** One send at a time to `streams` players of open streams, each awaited to its last event. */
async function streamDelays(base: string, idp: TestIdp, p: SendPhase, pid: number) {
  const now = Math.floor(Date.now() / 1000);
  const players = Array.from({ length: p.streams }, (_, i) => `live-${i}`);
  const tokens = await Promise.all(
    players.map((sub) => idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub, iat: now, exp: now + 3600 })),
  );
  const arrivals: [string, number][] = [];
  const readers = startReaders(p.streams, arrivals);
  try {
    readers.tell({ url: base, tokens });
    await readers.ready;
    const rounds = Math.max(5, Math.round(p.sends / 2));
    const started = new Map<string, number>();
    let expected = 0;
    const cpuBefore = processCpuSeconds(pid);
    for (let r = 0; r < rounds; r++) {
      const users = players.slice((r * RECIPIENTS) % p.streams).slice(0, RECIPIENTS);
      const sent = await send(base, "BenchLive", users);
      started.set(sent.requestId, sent.started);
      expected += users.length;
      await waitUntil(() => arrivals.length >= expected, "every stream's event", 60_000, 10);
    }
    const cpuSeconds = processCpuSeconds(pid) - cpuBefore;
    const delays = arrivals.map(([id, at]) => at - (started.get(id) ?? Number.NaN));
    if (delays.some((d) => Number.isNaN(d))) throw new Error("a stream read an event of no send of this phase");
    return { delays: delays.sort((a, b) => a - b), rounds, cpuSeconds };
  } finally {
    readers.tell({ close: true });
    await readers.exited;
  }
}

export async function measureSend(p: SendPhase): Promise<{ figures: Figure[]; results: SendResult }> {
  const database = `bench_${p.tag}sd`;
  const databaseUrl = await stack.createDatabase(p.adminUrl, database);
  const idp = await startTestIdp();
  let service: stack.Service | undefined;
  try {
    service = await stack.startService(
      "notification",
      p.bin.notification,
      {
        DATABASE_URL: databaseUrl,
        NATS_ENABLED: "false",
        LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
        NOTIFICATION_AUTH_TOKENS: tokenEntryLine("bench", TOKEN, "notify"),
        NOTIFICATION_ENDPOINT_SECRET_KEY: "ab".repeat(32),
        NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
        NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
        NOTIFICATION_STREAM_MAX: String(p.streams + 100),
      },
      join(p.logDir, "send-notification.log"),
    );
    p.progress(`send: ${p.sends} sends of ${RECIPIENTS} new recipients, 4 at a time`);
    const cpu = [processCpuSeconds(service.pid)];
    const stored = await storedPerSecond(service.url, p.sends);
    cpu.push(processCpuSeconds(service.pid));
    p.progress(`send: ${p.streams} streams open in a process of their own, sends of ${RECIPIENTS} of those players`);
    const { delays, rounds, cpuSeconds } = await streamDelays(service.url, idp, p, service.pid);
    const results = {
      storedPerSecond: stored,
      p50Ms: quantile(delays, 0.5),
      p99Ms: quantile(delays, 0.99),
      events: delays.length,
      rounds,
      coreMsPerStoredSend: (((cpu[1] ?? 0) - (cpu[0] ?? 0)) * 1000) / p.sends,
      coreMsPerStreamedSend: (cpuSeconds * 1000) / rounds,
    };
    return { figures: sendFigures(results, p.streams), results };
  } finally {
    await service?.stop();
    await idp.close();
    await stack.dropDatabase(p.adminUrl, database);
  }
}

function sendFigures(r: SendResult, streams: number): Figure[] {
  return [
    { name: "send: recipients stored/s", value: r.storedPerSecond, unit: "/s", target: { op: ">=", value: 20_000 } },
    { name: "send: Notification core-ms per send of 1,000, storing", value: r.coreMsPerStoredSend, unit: "ms" },
    { name: `send: request → stream event p50, ${streams} streams`, value: r.p50Ms, unit: "ms" },
    {
      name: `send: request → stream event p99, ${streams} streams`,
      value: r.p99Ms,
      unit: "ms",
      target: { op: "<=", value: 200 },
    },
    { name: "send: Notification core-ms per send to streaming players", value: r.coreMsPerStreamedSend, unit: "ms" },
  ];
}

if (import.meta.main) {
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const tag = Date.now().toString(36);
  const logDir = join(stack.root, ".data/bench", tag);
  mkdirSync(logDir, { recursive: true });
  const progress = (line: string) => console.error(`[send] ${line}`);
  // BENCH_NOTIFICATION_BINARY measures another build (an older commit's, for an A/B) instead of this tree's.
  const given = process.env.BENCH_NOTIFICATION_BINARY;
  if (!given) progress("building executables into .data/bench/dist");
  const bin = given ? { notification: given, entitlement: "" } : await stack.buildBinaries();
  const streams = Number(process.argv[2] ?? 5_000);
  const sends = Number(process.argv[3] ?? 20);
  const { figures, results } = await measureSend({ bin, adminUrl, tag, streams, sends, logDir, progress });
  console.log(`${renderTable(figures)}\n${JSON.stringify(results)}`);
  process.exit(0);
}
