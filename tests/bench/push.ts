// The push phase (`bun run bench --only push`, and in a full run): Notification's executable on a PostgreSQL cluster
// of the phase's own (own-cluster.ts; NATS off: every notification comes from the send API) pushing to the stand-in
// push services of push-standin.ts, a process of their own. Two measurements:
//   throughput: `devices` players with one Web Push device each on one push service; notifications to all of them sent
//     1,000 recipients a request, four requests at a time; pushes per second from the first send to the last push the
//     stand-in received, and the CPU per push of each stage (Notification, PostgreSQL, the stand-in, the harness).
//   a hanging push service: rounds of one notification to each of 1,000 players (a fifth of `devices` when fewer) whose
//     device is on the healthy service (the time from the send to each push's arrival: p50, p99); then the same for
//     as many players who also have a device on a service that never answers. Its pushes hold their slots until
//     NOTIFICATION_PUSH_TIMEOUT; the healthy one's p99 should not move.
// The stand-in's mode: `count` (default) verifies the VAPID JWT of one push in 100 and decrypts none; `decrypt` checks
// every push as a browser would (tests/support/webpush-service.ts), which costs the stand-in an ECDH per push.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import postgres from "postgres";
import webpush from "web-push";
import { upsertDevice } from "../../src/notification/features/push/queries.ts";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { measureCpu, measurePostgresCpu } from "./cpu.ts";
import { type OwnPostgres, startOwnPostgres } from "./own-cluster.ts";
import type { Figure } from "./report.ts";
import * as stack from "./stack.ts";
import { round, summarize } from "./stats.ts";

export type PushOptions = { devices: number; rounds: number; mode: "count" | "decrypt" };

export type PushPhase = {
  bin: stack.Binaries;
  tag: string;
  options: PushOptions;
  logDir: string;
  progress: (line: string) => void;
};

const TOKEN = "bench-push-notify-token-0123456789";
const BATCH = 1_000;
/** Players of each latency round: 1,000, fewer for a small run (--quick). */
const latencyPlayers = (devices: number) => Math.max(10, Math.min(1_000, Math.floor(devices / 5)));

export type Standin = { pid: number; healthy: string; hanging: string; control: string; stop: () => Promise<void> };
type Stats = { count: number; checked: number; refused: string[]; hanging: number; arrivals: number[] };

/** What the phase started, for its measurements. */
type Rig = {
  pg: OwnPostgres;
  sql: postgres.Sql;
  standin: Standin;
  notification: stack.Service;
  progress: (line: string) => void;
};

export async function measurePush(p: PushPhase): Promise<{ figures: Figure[]; results: Record<string, unknown> }> {
  const stops: (() => unknown)[] = [];
  try {
    const rig = await startRig(p, stops);
    const throughput = await measureThroughput(rig, p.options.devices);
    const players = latencyPlayers(p.options.devices);
    const calm = await measureRounds(rig, { label: "calm", players, rounds: p.options.rounds, hanging: false });
    const beside = await measureRounds(rig, {
      label: "beside-hanging",
      players,
      rounds: p.options.rounds,
      hanging: true,
    });
    const hangingRequests = (await stats(rig.standin)).hanging;
    const results = {
      options: p.options,
      settings: pushSettings(),
      throughput,
      calm,
      besideHanging: { ...beside, hangingRequests },
    };
    return { figures: pushFigures(throughput, calm, beside, p.options), results };
  } finally {
    for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => {});
  }
}

/** The settings that bound the pushes' pace, as this run gave them to Notification (from the environment, else its defaults). */
const pushSettings = () =>
  Object.fromEntries(
    [
      "NOTIFICATION_PUSH_CONCURRENCY",
      "NOTIFICATION_PUSH_MAX_IN_FLIGHT",
      "NOTIFICATION_PUSH_TIMEOUT",
      "NOTIFICATION_DELIVERY_POLL_INTERVAL",
    ].map((name) => [name, process.env[name] ?? "default"]),
  );

/** The cluster, its migrated database, the stand-in and Notification; each pushes its stop onto `stops`. */
async function startRig(p: PushPhase, stops: (() => unknown)[]): Promise<Rig> {
  p.progress("push: starting a PostgreSQL cluster of the phase's own");
  const pg = await startOwnPostgres();
  stops.push(pg.stop);
  const databaseUrl = await stack.createDatabase(pg.url, `bench_push_${p.tag}`);
  const common = { DATABASE_URL: databaseUrl, NATS_ENABLED: "false" };
  const migrated = Bun.spawnSync([p.bin.notification, "migrate"], { env: { ...process.env, ...common } });
  if (migrated.exitCode !== 0) throw new Error(`notification migrate failed: ${migrated.stderr.toString()}`);
  const standin = await startStandin(p.options.mode);
  stops.push(standin.stop);
  const vapid = webpush.generateVAPIDKeys();
  const env = {
    ...common,
    LOG_LEVEL: "warn",
    NOTIFICATION_AUTH_TOKENS: tokenEntryLine("bench", TOKEN, "notify"),
    NOTIFICATION_ENDPOINT_SECRET_KEY: "ab".repeat(32),
    NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY: vapid.publicKey,
    NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY: vapid.privateKey,
    NOTIFICATION_WEBPUSH_SUBJECT: "mailto:bench@example.com",
    // The stand-ins listen on http://127.0.0.1.
    NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
  };
  const log = join(p.logDir, "push-notification.log");
  const notification = await stack.startService("notification", p.bin.notification, env, log);
  stops.push(notification.stop);
  const sql = postgres(databaseUrl, { max: 8, onnotice: () => {}, connection: { search_path: "notification" } });
  stops.push(() => sql.end());
  return { pg, sql, standin, notification, progress: p.progress };
}

export async function startStandin(mode: PushOptions["mode"]): Promise<Standin> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "push-standin.ts"), mode], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the push stand-in exited with ${await child.exited}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const addresses = JSON.parse(text.slice(0, text.indexOf("\n"))) as Omit<Standin, "pid" | "stop">;
  return {
    ...addresses,
    pid: child.pid,
    stop: async () => {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}

const stats = async (s: Standin) => (await (await fetch(`${s.control}/stats`)).json()) as Stats;

/** One device for each player, on the healthy service or the hanging one, registered as the API registers them. */
async function addDevices(rig: Rig, users: string[], hanging: boolean): Promise<void> {
  const response = await fetch(`${rig.standin.control}/subscribe`, {
    method: "POST",
    body: JSON.stringify({ n: users.length, hanging }),
  });
  const subs = (await response.json()) as { endpoint: string; keys: { p256dh: string; auth: string } }[];
  const now = new Date();
  for (let i = 0; i < users.length; i += 200) {
    await Promise.all(
      users.slice(i, i + 200).map((userId, j) => {
        const s = subs[i + j] as (typeof subs)[number];
        const device = { platform: "webpush" as const, endpoint: s.endpoint, p256dh: s.keys.p256dh, auth: s.keys.auth };
        return upsertDevice(rig.sql, { deviceId: randomUUID(), userId, device, now });
      }),
    );
  }
}

async function send(rig: Rig, type: string, users: string[]): Promise<void> {
  const response = await fetch(`${rig.notification.url}/v1/notifications`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "idempotency-key": randomUUID() },
    body: JSON.stringify({ type, user_ids: users, title: "Bench", body: "A push of the bench", data: { type } }),
  });
  if (response.status !== 202) throw new Error(`send answered ${response.status}: ${await response.text()}`);
}

/**
 * Polls the stand-in until `wanted` healthy pushes arrived, or `timeoutMs` passed; the arrival times (epoch ms) of
 * those that did (fewer than wanted on a timeout: the caller reports what arrived).
 */
async function arrivals(rig: Rig, wanted: number, timeoutMs: number): Promise<number[]> {
  const got: number[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await stats(rig.standin);
    if (s.refused.length > 0) throw new Error(`the stand-in refused pushes: ${s.refused.join("; ")}`);
    got.push(...s.arrivals);
    if (got.length >= wanted) return got;
    if (Date.now() > deadline) {
      rig.progress(`push: only ${got.length} of ${wanted} pushes arrived within ${timeoutMs / 1000} s`);
      return got;
    }
    await Bun.sleep(100);
  }
}

type Throughput = {
  devices: number;
  /** Pushes the stand-in received (all `devices` unless the wait ran out). */
  arrived: number;
  pushesPerSecond: number;
  /** From the first send to the last 202, and to the last push received. */
  sendSeconds: number;
  seconds: number;
  vapidChecked: number;
  machineBusy: number;
  cpuPerPushUs: Record<"notification" | "postgres" | "standin" | "harness" | "everythingElse", number>;
};

const chunks = <T>(items: T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

async function measureThroughput(rig: Rig, devices: number): Promise<Throughput> {
  const users = Array.from({ length: devices }, (_, i) => `tp-${i}`);
  rig.progress(`push: registering ${devices} devices on one push service`);
  await addDevices(rig, users, false);
  await stats(rig.standin);
  const cpu = measureCpu({ notification: rig.notification.pid, standin: rig.standin.pid });
  const pgCpu = measurePostgresCpu(rig.pg.postmasterPid);
  const started = Date.now();
  const batches = chunks(users, BATCH);
  let next = 0;
  const sender = async () => {
    for (let i = next++; i < batches.length; i = next++) await send(rig, "BenchPush", batches[i] as string[]);
  };
  await Promise.all([sender(), sender(), sender(), sender()]);
  const sendSeconds = (Date.now() - started) / 1000;
  rig.progress(`push: ${devices} notifications stored in ${sendSeconds.toFixed(1)} s; waiting for their pushes`);
  const got = await arrivals(rig, devices, Math.max(120_000, devices * 100));
  const report = cpu();
  const postgresSeconds = [...pgCpu().values()].reduce((a, b) => a + b, 0);
  const seconds = (got.reduce((a, b) => Math.max(a, b), started) - started) / 1000;
  const busy = report.machineBusy * navigator.hardwareConcurrency * report.elapsedSeconds;
  const own = { ...report.seconds, postgres: postgresSeconds } as Record<string, number>;
  const perPush = (s: number) => round((s / Math.max(1, got.length)) * 1e6);
  const named = ["notification", "postgres", "standin", "harness"] as const;
  const rest = busy - named.reduce((a, name) => a + (own[name] ?? 0), 0);
  return {
    devices,
    arrived: got.length,
    pushesPerSecond: round(got.length / Math.max(0.001, seconds)),
    sendSeconds: round(sendSeconds, 2),
    seconds: round(seconds, 2),
    vapidChecked: (await stats(rig.standin)).checked,
    machineBusy: round(report.machineBusy * 100),
    cpuPerPushUs: {
      ...(Object.fromEntries(named.map((name) => [name, perPush(own[name] ?? 0)])) as Record<string, number>),
      everythingElse: perPush(Math.max(0, rest)),
    } as Throughput["cpuPerPushUs"],
  };
}

type Rounds = { players: number; rounds: number; p50: number; p99: number; max: number; n: number };

/**
 * Rounds of one notification to each of `players` players whose device is on the healthy service (with
 * `hanging`, each also has one on the hanging service); the time from each send to each healthy push's arrival.
 */
async function measureRounds(
  rig: Rig,
  o: { label: string; players: number; rounds: number; hanging: boolean },
): Promise<Rounds> {
  const { label, rounds, hanging } = o;
  const users = Array.from({ length: o.players }, (_, i) => `${label}-${i}`);
  await addDevices(rig, users, false);
  if (hanging) await addDevices(rig, users, true);
  await stats(rig.standin);
  const latencies: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const started = Date.now();
    await send(rig, "BenchRound", users);
    const got = await arrivals(rig, users.length, 120_000);
    latencies.push(...got.map((at) => at - started));
  }
  const s = summarize(latencies);
  rig.progress(`push: ${label}: p50 ${s.p50.toFixed(0)} ms, p99 ${s.p99.toFixed(0)} ms over ${s.n} pushes`);
  return { players: users.length, rounds, p50: round(s.p50), p99: round(s.p99), max: round(s.max), n: s.n };
}

function pushFigures(t: Throughput, calm: Rounds, beside: Rounds, o: PushOptions): Figure[] {
  const stage = (name: string, value: number) => ({ name: `push: CPU per push, ${name}`, value, unit: "µs" });
  return [
    {
      name: `push: pushes per second, ${t.devices} devices on one push service`,
      value: t.pushesPerSecond,
      unit: "/s",
      target: { op: ">=", value: 2_000 },
    },
    stage("Notification", t.cpuPerPushUs.notification),
    stage("PostgreSQL", t.cpuPerPushUs.postgres),
    stage(`the stand-in (${o.mode})`, t.cpuPerPushUs.standin),
    stage("the harness", t.cpuPerPushUs.harness),
    stage("everything else on the machine", t.cpuPerPushUs.everythingElse),
    { name: "push: machine CPU busy, throughput", value: t.machineBusy, unit: "%" },
    { name: "push: healthy service p50, alone", value: calm.p50, unit: "ms" },
    { name: "push: healthy service p99, alone", value: calm.p99, unit: "ms" },
    { name: "push: healthy service p50, beside a hanging one", value: beside.p50, unit: "ms" },
    { name: "push: healthy service p99, beside a hanging one", value: beside.p99, unit: "ms" },
  ];
}
