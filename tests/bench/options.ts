// Flags of `bun run bench`. Defaults are the sizes docs/benchmarks.md reports; `--quick` shrinks every phase so the whole harness runs in
// well under a minute (the smoke test and a first look).
import { parseArgs } from "node:util";

export type BenchOptions = {
  quick: boolean;
  /** Seconds of each autocannon and pgbench run. */
  duration: number;
  /** Concurrency levels of the grant-throughput phase (API and pgbench alike). */
  connections: number[];
  /** End-to-end phase: grants per second and seconds. */
  rate: number;
  /** The peak rate of the second end-to-end run (`--peak-rate`). */
  peakRate: number;
  rateDuration: number;
  /** Outbox rows drained by the relay, messages of the raw publish, and events of the ingest backlog. */
  events: number;
  /** Concurrent publishes per window in the raw publish. */
  publishWindow: number;
  /** Point reservations: the backlog drained, and the steady due rate (per second, for seconds) of the lateness phase. */
  reservations: number;
  dueRate: number;
  dueDuration: number;
  /** Entitlements granted to expire at one instant in the expiry lateness phase (bundles of 100). */
  expiries: number;
  /** Events committed at once in the pipeline-cost phase's backlog window (pipeline.ts). */
  pipelineBacklog: number;
  /** Longest wait for the pipeline to go quiet between phases, in seconds. */
  settleTimeout: number;
  /** Rows per table of each deployment size of the growth phase (growth.ts), and timed reads per query. */
  growthSizes: number[];
  growthSamples: number;
  /** `--growth-retention outbox_events,…`: the growth phase fills and cleans only these tables (no reads). */
  growthRetention: string[] | undefined;
  /**
   * Players' phase (players.ts): open streams, seconds they stay idle (Notification's CPU measured), grants per second
   * to them and seconds, notifications missed.
   */
  streams: number;
  idleSeconds: number;
  playerRate: number;
  playerSeconds: number;
  resume: number;
  /** Send phase (send.ts): streams open during its timed sends, and sends of 1,000 recipients for the stored rate. */
  sendStreams: number;
  sends: number;
  /** Push phase (push.ts): devices on one push service, rounds beside a hanging one, the stand-in's checks. */
  pushDevices: number;
  pushRounds: number;
  pushMode: "count" | "decrypt";
  /** `api`, `points`, `growth`, `players` or `push`: only those phases (api-alone.ts, points-phase.ts, growth.ts, players-phase.ts, push.ts). */
  only: "api" | "points" | "growth" | "players" | "push" | undefined;
  /** Where the JSON goes (default .data/bench/<timestamp>.json). */
  out: string | undefined;
  keep: boolean;
  /** Run on DATABASE_URL's server instead of a PostgreSQL cluster of the bench's own (bench-postgres.ts). */
  useDatabaseUrl: boolean;
};

export const USAGE = `usage: bun run bench [--quick] [--duration S] [--connections 16,64] [--rate N] [--peak-rate N] [--rate-duration S]
                     [--events N] [--publish-window N] [--reservations N] [--due-rate N] [--due-duration S]
                     [--expiries N] [--pipeline-backlog N] [--settle-timeout S] [--growth-sizes N,N] [--growth-samples N] [--growth-retention T,T]
                     [--streams N] [--idle-seconds S] [--player-rate N] [--player-seconds S] [--resume N] [--send-streams N] [--sends N]
                     [--push-devices N] [--push-rounds N] [--push-mode count|decrypt]
                     [--only api|points|growth|players|push] [--out FILE] [--keep]
                     [--use-database-url]`;

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${text}'\n${USAGE}`);
  return n;
}

/** The flags USAGE lists, as parseArgs reads them. */
const FLAGS = {
  quick: { type: "boolean", default: false },
  duration: { type: "string" },
  connections: { type: "string" },
  rate: { type: "string" },
  "peak-rate": { type: "string" },
  "rate-duration": { type: "string" },
  events: { type: "string" },
  "publish-window": { type: "string" },
  reservations: { type: "string" },
  "due-rate": { type: "string" },
  "due-duration": { type: "string" },
  expiries: { type: "string" },
  "pipeline-backlog": { type: "string" },
  "settle-timeout": { type: "string" },
  "growth-sizes": { type: "string" },
  "growth-samples": { type: "string" },
  "growth-retention": { type: "string" },
  streams: { type: "string" },
  "idle-seconds": { type: "string" },
  "player-rate": { type: "string" },
  "player-seconds": { type: "string" },
  resume: { type: "string" },
  "send-streams": { type: "string" },
  sends: { type: "string" },
  "push-devices": { type: "string" },
  "push-rounds": { type: "string" },
  "push-mode": { type: "string" },
  only: { type: "string" },
  out: { type: "string" },
  keep: { type: "boolean", default: false },
  "use-database-url": { type: "boolean", default: false },
} as const;

const PHASE_GROUPS = ["api", "points", "growth", "players", "push"] as const;

export function parseBenchOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({ args: argv, options: FLAGS });
  const quick = values.quick ?? false;
  const only = values.only;
  if (only !== undefined && !(PHASE_GROUPS as readonly string[]).includes(only))
    throw new Error(`--only takes one phase group: ${PHASE_GROUPS.join(", ")}, got '${only}'\n${USAGE}`);
  const pushMode = values["push-mode"] ?? "count";
  if (pushMode !== "count" && pushMode !== "decrypt")
    throw new Error(`--push-mode takes count or decrypt, got '${pushMode}'\n${USAGE}`);
  const growthSizes = (values["growth-sizes"] ?? (quick ? "1000,10000" : "100000,1000000"))
    .split(",")
    .map((n) => Math.round(positive("growth-sizes", n, 0)));
  const connections = (values.connections ?? "16,64").split(",").map((c) => positive("connections", c, 0));
  return {
    quick,
    duration: positive("duration", values.duration, quick ? 2 : 10),
    connections,
    rate: positive("rate", values.rate, quick ? 100 : 300),
    peakRate: positive("peak-rate", values["peak-rate"], quick ? 200 : 1_000),
    rateDuration: positive("rate-duration", values["rate-duration"], quick ? 2 : 20),
    events: Math.round(positive("events", values.events, quick ? 2_000 : 100_000)),
    publishWindow: Math.round(positive("publish-window", values["publish-window"], 256)),
    reservations: Math.round(positive("reservations", values.reservations, quick ? 2_000 : 100_000)),
    dueRate: positive("due-rate", values["due-rate"], quick ? 200 : 1_000),
    dueDuration: positive("due-duration", values["due-duration"], quick ? 2 : 20),
    expiries: Math.round(positive("expiries", values.expiries, quick ? 500 : 2_000)),
    pipelineBacklog: Math.round(positive("pipeline-backlog", values["pipeline-backlog"], quick ? 1_000 : 20_000)),
    settleTimeout: positive("settle-timeout", values["settle-timeout"], quick ? 20 : 120),
    growthSizes,
    growthRetention: values["growth-retention"]?.split(","),
    growthSamples: Math.round(positive("growth-samples", values["growth-samples"], quick ? 30 : 2_000)),
    streams: Math.round(positive("streams", values.streams, quick ? 50 : 20_000)),
    idleSeconds: positive("idle-seconds", values["idle-seconds"], quick ? 2 : 60),
    playerRate: positive("player-rate", values["player-rate"], quick ? 20 : 200),
    playerSeconds: positive("player-seconds", values["player-seconds"], quick ? 2 : 20),
    resume: Math.round(positive("resume", values.resume, quick ? 100 : 1_000)),
    sendStreams: Math.round(positive("send-streams", values["send-streams"], quick ? 100 : 5_000)),
    sends: Math.round(positive("sends", values.sends, quick ? 4 : 20)),
    pushDevices: Math.round(positive("push-devices", values["push-devices"], quick ? 500 : 10_000)),
    pushRounds: Math.round(positive("push-rounds", values["push-rounds"], quick ? 2 : 5)),
    pushMode,
    only: only as BenchOptions["only"],
    out: values.out,
    keep: values.keep ?? false,
    useDatabaseUrl: values["use-database-url"] ?? false,
  };
}
