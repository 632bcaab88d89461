// The system under test: a fresh database and fresh stream, subject and durable names on the local PostgreSQL and
// NATS, the two executables built into .data/bench/dist (so a `bun run stack` running from dist/ is left alone), and
// helpers to start and stop them, time their readiness and read their memory.
import { readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import postgres from "postgres";
import { EntitlementEnv } from "../../src/entitlement/config.ts";
import { newToken, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { buildService, defaultTarget } from "../../tools/build.ts";
import { freePort } from "../../tools/infra/net.ts";

export const root = resolve(import.meta.dir, "../..");

export type Names = {
  database: string;
  stream: string;
  subject: string;
  durable: string;
  advisories: { kind: string; subject: string; stream: string; durable: string }[];
  /** The matchmaking consumer's own stream, subject and durable. */
  matches: { stream: string; subject: string; durable: string };
};

export function benchNames(tag: string): Names {
  const stream = `bench-${tag}-events`;
  const durable = `bench-${tag}-consumer`;
  const advisory = (kind: string, short: string) => ({
    kind,
    subject: `$JS.EVENT.ADVISORY.CONSUMER.${kind}.${stream}.${durable}`,
    stream: `bench-${tag}-adv-${short}`,
    durable: `bench-${tag}-adv-${short}-consumer`,
  });
  return {
    database: `bench_${tag}`,
    stream,
    subject: `bench.${tag}.events`,
    durable,
    advisories: [advisory("MAX_DELIVERIES", "max"), advisory("MSG_TERMINATED", "term")],
    matches: {
      stream: `bench-${tag}-matches`,
      subject: `bench.${tag}.matches`,
      durable: `bench-${tag}-matches-consumer`,
    },
  };
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  return withDatabase(adminUrl, name);
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
  } finally {
    await admin.end();
  }
}

export async function deleteStreams(nc: NatsConnection, names: string[]): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const name of names) await jsm.streams.delete(name).catch(() => false);
}

export async function connectBenchNats(url: string): Promise<NatsConnection> {
  return connect({ servers: url.split(",").map((s) => s.trim()), name: "bench" });
}

export type Binaries = { entitlement: string; notification: string };

export async function buildBinaries(): Promise<Binaries> {
  const outdir = join(root, ".data/bench/dist");
  const target = defaultTarget();
  const [entitlement, notification] = await Promise.all([
    buildService("entitlement", { target, outdir }),
    buildService("notification", { target, outdir }),
  ]);
  return { entitlement, notification };
}

export const fileSize = (path: string) => statSync(path).size;

/** How the API is called: a generated token when the service requires one, no header when it has no auth at all. */
export type ApiAuth = { env: Record<string, string>; headers: Record<string, string>; mode: string };

export function apiAuth(): ApiAuth {
  const keys = Object.keys(EntitlementEnv.properties);
  const rateLimit: Record<string, string> = keys.includes("ENTITLEMENT_RATE_LIMIT_RPS")
    ? // The per-caller limit (1000/s by default) would cap the measurement at itself; a huge limit keeps its code path.
      { ENTITLEMENT_RATE_LIMIT_RPS: "10000000", ENTITLEMENT_RATE_LIMIT_BURST: "10000000" }
    : {};
  if (!keys.includes("ENTITLEMENT_AUTH_TOKENS")) return { env: rateLimit, headers: {}, mode: "none" };
  const token = newToken();
  return {
    env: { ...rateLimit, ENTITLEMENT_AUTH_TOKENS: tokenEntryLine("bench", token, "read+write") },
    headers: { authorization: `Bearer ${token}` },
    mode: "bearer token",
  };
}

/** Entitlement's variables for a run: its stream and subject names, the API's authentication. */
export function entitlementEnv(names: Names, common: Record<string, string>, auth: ApiAuth): Record<string, string> {
  return {
    ...common,
    ...auth.env,
    ...(auth.mode === "bearer token" ? { ENTITLEMENT_AUTH_DISABLED: "false" } : {}),
    // The default pool (10): since the gate queues up to 1,000 requests a burst of 64 no longer gets 503s, and on two
    // cores pool 10 served as well as 16 or better (alternating 6 s runs at load average ~7: c=64 588 / 468 vs 489 /
    // 476 grants/s, c=16 500 / 540 vs 485 / 474, no non-2xx).
    // DATABASE_POOL_MAX in the environment still reaches the services.
    ENTITLEMENT_NATS_STREAM: names.stream,
    ENTITLEMENT_NATS_SUBJECT: names.subject,
    // The points stream of the run (Entitlement creates it beside the entitlement stream; deleted with it).
    ENTITLEMENT_POINTS_NATS_STREAM: `${names.stream}-points`,
    ENTITLEMENT_POINTS_NATS_SUBJECT: `${names.subject}.points`,
  };
}

/** Notification's variables for a run: the stream, durable and advisory names; delivery on or off. */
export function notificationEnv(names: Names, common: Record<string, string>, delivery: boolean) {
  const [max, term] = names.advisories;
  return {
    ...common,
    NOTIFICATION_DELIVERY_ENABLED: String(delivery),
    NOTIFICATION_DELIVERY_CHANNEL: "log",
    NOTIFICATION_NATS_STREAM: names.stream,
    NOTIFICATION_NATS_SUBJECT: names.subject,
    NOTIFICATION_NATS_DURABLE: names.durable,
    NOTIFICATION_NATS_ADVISORY_SUBJECT: max?.subject ?? "",
    NOTIFICATION_NATS_ADVISORY_STREAM: max?.stream ?? "",
    NOTIFICATION_NATS_ADVISORY_DURABLE: max?.durable ?? "",
    NOTIFICATION_NATS_TERMINATED_ADVISORY_SUBJECT: term?.subject ?? "",
    NOTIFICATION_NATS_TERMINATED_ADVISORY_STREAM: term?.stream ?? "",
    NOTIFICATION_NATS_TERMINATED_ADVISORY_DURABLE: term?.durable ?? "",
    NOTIFICATION_MATCHMAKING_NATS_STREAM: names.matches.stream,
    NOTIFICATION_MATCHMAKING_NATS_SUBJECT: names.matches.subject,
    NOTIFICATION_MATCHMAKING_NATS_DURABLE: names.matches.durable,
    // The points stream Entitlement creates for the run (entitlementEnv).
    NOTIFICATION_POINTS_NATS_STREAM: `${names.stream}-points`,
    NOTIFICATION_POINTS_NATS_SUBJECT: `${names.subject}.points`,
    NOTIFICATION_POINTS_NATS_DURABLE: `${names.durable}-points`,
  };
}

export type Service = {
  name: string;
  pid: number;
  url: string;
  /** Milliseconds from exec to the first /readyz 200. */
  readyMs: number;
  rssMb: () => number;
  stop: () => Promise<void>;
};

/** VmRSS of a process in MiB (0 when it is gone). */
export function rssMb(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+)\s+kB/m);
    return line ? Number(line[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

export async function startService(
  name: string,
  binary: string,
  env: Record<string, string>,
  logFile: string,
): Promise<Service> {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const proc = Bun.spawn([binary, "serve"], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdout: Bun.file(logFile),
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr).text();
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode}: ${await stderr}`);
    const status = await fetch(`${url}/readyz`)
      .then((r) => r.status)
      .catch(() => 0);
    if (status === 200) break;
    if (performance.now() - started > 60_000) throw new Error(`${name} was not ready within 60s (log: ${logFile})`);
    await Bun.sleep(5);
  }
  const readyMs = performance.now() - started;
  return {
    name,
    pid: proc.pid,
    url,
    readyMs,
    rssMb: () => rssMb(proc.pid),
    stop: async () => {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      await proc.exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Start-up, exec → first /readyz 200, of `runs` starts of each service, each stopped before the next; the services
 * alternate (A B A B …) so a machine whose speed drifts weighs on both alike. Milliseconds of each start, by service.
 */
export async function readyTimes(
  starts: Record<string, (run: number) => Promise<Service>>,
  runs: number,
): Promise<Record<string, number[]>> {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(starts).map((name) => [name, []]));
  for (let run = 0; run < runs; run++) {
    for (const [name, start] of Object.entries(starts)) {
      const service = await start(run);
      times[name]?.push(service.readyMs);
      await service.stop();
    }
  }
  return times;
}

/** Samples the RSS of some processes until stopped; returns the peak of each. */
export function sampleRss(services: Service[]): () => Record<string, number> {
  const peak: Record<string, number> = {};
  const sample = () => {
    for (const s of services) peak[s.name] = Math.max(peak[s.name] ?? 0, s.rssMb());
  };
  sample();
  const timer = setInterval(sample, 200);
  return () => {
    clearInterval(timer);
    sample();
    return peak;
  };
}
