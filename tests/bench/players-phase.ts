// `bun run bench --only players`: both executables on a database of their own (the bench's PostgreSQL) with the
// players' routes on, trusting an OpenID provider in the harness process (tests/support/idp.ts), and the phase of
// players.ts against them; stopped and removed after.
import { readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import { startTestIdp } from "../support/idp.ts";
import { processCpuSeconds } from "./cpu.ts";
import type { BenchOptions } from "./options.ts";
import { measurePlayerStreams } from "./players.ts";
import type { Figure } from "./report.ts";
import * as stack from "./stack.ts";

const AUDIENCE = "https://players.bench";

export type PlayersPhase = {
  bin: stack.Binaries;
  nc: NatsConnection;
  natsUrl: string;
  adminUrl: string;
  tag: string;
  options: BenchOptions;
  logDir: string;
  progress: (line: string) => void;
};

/** Descriptors Notification keeps for itself: beyond its open-file limit less these it refuses streams (setup.ts). */
const NOTIFICATION_OWN_FDS = 1_000;

/**
 * Streams Notification can hold here: one descriptor each, within the limit it inherits from this process (the hard
 * limit of this machine's containers is 20,000 and cannot be raised from inside).
 */
function streamsThatFit(wanted: number, progress: (line: string) => void): number {
  const limit = Number(/^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1] ?? Infinity);
  // One stream more is opened at the end: the player who resumes.
  const fit = Math.min(wanted, limit - NOTIFICATION_OWN_FDS - 1);
  if (fit < wanted) progress(`players: ${wanted} streams asked, ${fit} fit in the open-file limit of ${limit}`);
  return fit;
}

export async function measurePlayers(
  p: PlayersPhase,
): Promise<{ figures: Figure[]; results: Record<string, unknown> }> {
  const options = { ...p.options, streams: streamsThatFit(p.options.streams, p.progress) };
  const names = stack.benchNames(`${p.tag}pl`);
  const idp = await startTestIdp();
  const databaseUrl = await stack.createDatabase(p.adminUrl, names.database);
  const running: stack.Service[] = [];
  try {
    const common = { DATABASE_URL: databaseUrl, NATS_URL: p.natsUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "warn" };
    const auth = stack.apiAuth();
    const log = (name: string) => `${p.logDir}/${name}.log`;
    const entitlementEnv = stack.entitlementEnv(names, common, auth);
    running.push(
      await stack.startService("entitlement", p.bin.entitlement, entitlementEnv, log("players-entitlement")),
    );
    const notificationEnv = {
      ...stack.notificationEnv(names, common, true),
      NOTIFICATION_PLAYER_JWT_ISSUER: idp.issuer,
      NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
      NOTIFICATION_PLAYER_NATS_SUBJECT: `${names.subject}.players`,
      NOTIFICATION_STREAM_MAX: String(Math.max(10_000, options.streams * 2)),
    };
    const notification = await stack.startService(
      "notification",
      p.bin.notification,
      notificationEnv,
      log("players-notification"),
    );
    running.push(notification);
    const exp = Math.floor(Date.now() / 1000) + 3_600;
    const result = await measurePlayerStreams({
      entitlementUrl: running[0]?.url ?? "",
      notificationUrl: notification.url,
      headers: auth.headers,
      tokenFor: (userId) => idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub: userId, exp, iat: exp - 3_600 }),
      streams: options.streams,
      rate: options.playerRate,
      seconds: options.playerSeconds,
      resume: options.resume,
      tag: p.tag,
      rssMb: notification.rssMb,
      cpuSeconds: () => processCpuSeconds(notification.pid),
      idleSeconds: options.idleSeconds,
      progress: p.progress,
    });
    return { figures: playerFigures(result, options), results: { players: result } };
  } finally {
    for (const service of running.reverse()) await service.stop();
    await stack.deleteStreams(p.nc, [
      names.stream,
      names.matches.stream,
      `${names.stream}-points`,
      ...names.advisories.map((a) => a.stream),
    ]);
    await stack.dropDatabase(p.adminUrl, names.database);
    await idp.close();
  }
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

/** The phase's figures, each with its target where the players' routes have one. */
function playerFigures(result: Awaited<ReturnType<typeof measurePlayerStreams>>, options: BenchOptions): Figure[] {
  const live = `${result.streams} streams, ${options.playerRate} grants/s`;
  const figures: Figure[] = [
    { name: `request → event p50 (${live})`, value: result.requestToEventMs.p50, unit: "ms" },
    {
      name: `request → event p99 (${live})`,
      value: result.requestToEventMs.p99,
      unit: "ms",
      target: { op: "<=", value: 100 },
    },
    {
      name: `stored → sent within 100 ms (${live})`,
      value: result.storedToSentWithin100ms,
      unit: "",
      target: { op: ">=", value: 0.99 },
    },
    {
      name: `events delivered ÷ grants (${result.granted} of ${sum(result.grantStatuses)} answered 200)`,
      value: result.delivered / Math.max(1, result.granted),
      unit: "",
      target: { op: ">=", value: 1 },
    },
    ...result.rssMb.map((r) => ({ name: `Notification RSS, ${r.streams} streams open`, value: r.mb, unit: "MiB" })),
    {
      name: `RSS per open stream, 0 → ${result.streams}`,
      value: result.rssPerStreamKb.fromZero,
      unit: "KB",
      target: { op: "<=", value: 16 },
    },
    {
      name: `RSS per open stream, ${result.rssMb[1]?.streams} → ${result.streams}`,
      value: result.rssPerStreamKb.beyondFirst,
      unit: "KB",
    },
    {
      name: `Notification CPU, ${result.streams} idle streams (share of one core)`,
      value: result.idleCpuShare * 100,
      unit: "%",
    },
    {
      name: `resume of ${result.resume.missed} missed (all received: ${result.resume.received === result.resume.missed})`,
      value: result.resume.ms,
      unit: "ms",
      target: { op: "<=", value: 1_000 },
    },
  ];
  return figures;
}
