// `bun run stack`: the whole system on this machine. Uses DATABASE_URL / NATS_URL when they answer, otherwise starts
// PostgreSQL and nats-server from the machine's binaries (data in .data/), builds both executables, starts them, waits
// for /readyz and prints ready-to-paste commands. Ctrl-C stops everything it started, and only that.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { newToken, tokenEntryLine } from "../src/entitlement/auth/tokens.ts";
import {
  answers,
  freePort,
  hostPort,
  INSTALL_HINT,
  postgresBin,
  type Started,
  startNats,
  startPostgres,
  waitUntil,
} from "./stack-infra.ts";

const root = resolve(import.meta.dir, "..");
const dataRoot = process.env.STACK_DATA_DIR ? resolve(process.env.STACK_DATA_DIR) : join(root, ".data");
const logDir = join(dataRoot, "logs");
const shown = (path: string) => (path.startsWith(root) ? relative(root, path) : path);
const started: Started[] = [];

async function ensureInfrastructure(): Promise<{ databaseUrl: string; natsUrl: string }> {
  let databaseUrl = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
  let natsUrl = process.env.NATS_URL || "nats://127.0.0.1:4222";
  const pg = hostPort(databaseUrl, 5432);
  const nats = hostPort(natsUrl, 4222);
  const pgUp = await answers(pg.host, pg.port);
  const natsUp = await answers(nats.host, nats.port);
  const pgBin = pgUp ? undefined : postgresBin();
  const natsBin = natsUp
    ? undefined
    : (Bun.which("nats-server", { PATH: `${process.env.PATH}:/usr/sbin:/sbin` }) ?? undefined);
  if ((!pgUp && !pgBin) || (!natsUp && !natsBin)) {
    const missing = [!pgUp && !pgBin ? "PostgreSQL (initdb, pg_ctl)" : "", !natsUp && !natsBin ? "nats-server" : ""];
    console.error(
      `${missing.filter(Boolean).join(" and ")} not found and nothing answers at ${databaseUrl} / ${natsUrl}.`,
    );
    console.error(`Install them: ${INSTALL_HINT}`);
    process.exit(1);
  }
  if (pgUp) console.log(`using PostgreSQL at ${pg.host}:${pg.port}`);
  else {
    const s = await startPostgres(pgBin as string, dataRoot);
    started.push(s);
    databaseUrl = s.url;
    console.log(`started ${s.name}`);
  }
  if (natsUp) console.log(`using NATS at ${nats.host}:${nats.port}`);
  else {
    const s = await startNats(natsBin as string, dataRoot);
    started.push(s);
    natsUrl = s.url;
    console.log(`started ${s.name}`);
  }
  return { databaseUrl, natsUrl };
}

async function build(): Promise<void> {
  const proc = Bun.spawn([process.execPath, "run", "build"], { cwd: root, stdout: "inherit", stderr: "inherit" });
  if ((await proc.exited) !== 0) throw new Error("bun run build failed");
}

async function startService(name: string, port: number, env: Record<string, string>): Promise<Started> {
  mkdirSync(logDir, { recursive: true });
  const proc = Bun.spawn([join(root, "dist", name), "serve"], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdout: Bun.file(join(logDir, `${name}.log`)),
    stderr: "inherit",
  });
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
  await waitUntil(ready, 90_000, `${name} /readyz`);
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

/** Fresh for every run and known only to this terminal: the API token (read+write) and the debug inbox token. */
const tokens = {
  api: newToken(),
  debug: process.env.NOTIFICATION_DEBUG_API_TOKEN || `dbg_${randomBytes(24).toString("base64url")}`,
};

function printUsage(entitlement: string, notification: string): void {
  const key = `demo-${Date.now().toString(36)}`;
  const api = `-H 'Authorization: Bearer ${tokens.api}'`;
  const debug = `-H 'Authorization: Bearer ${tokens.debug}'`;
  console.log(`
stack is up
  entitlement   ${entitlement}  (logs: ${shown(join(logDir, "entitlement.log"))})
  notification  ${notification}  (logs: ${shown(join(logDir, "notification.log"))})
  metrics       ${entitlement}/metrics (token needed)  ${notification}/metrics
  API token     ${tokens.api}  (caller "stack", read+write, valid for this run only)
  debug token   ${tokens.debug}  (debug inbox)

grant an item:
  curl -s -X POST ${entitlement}/v1/entitlements/grants ${api} -H 'Content-Type: application/json' -H 'Idempotency-Key: ${key}' -d '{"user_id":"u_123","stock_keeping_unit":"item1","reason":"purchase","purchase_id":"p_456"}'
see it, and its notification (SENT after a moment):
  curl -s ${api} ${entitlement}/v1/users/u_123/entitlements
  curl -s ${debug} ${notification}/debug/notification/inbox/u_123

Ctrl-C stops everything this command started.`);
}

async function main(): Promise<void> {
  process.on("SIGINT", () => void shutdown("interrupted", 0));
  process.on("SIGTERM", () => void shutdown("terminated", 0));
  const { databaseUrl, natsUrl } = await ensureInfrastructure();
  await build();
  if (!existsSync(join(root, "dist", "entitlement"))) throw new Error("dist/entitlement is missing after the build");
  const common = { DATABASE_URL: databaseUrl, NATS_URL: natsUrl };
  const pick = async (preferred: number) => ((await answers("127.0.0.1", preferred, 300)) ? freePort() : preferred);
  const ePort = await pick(8080);
  const nPort = await pick(8081);
  await startService("entitlement", ePort, {
    ...common,
    ENTITLEMENT_AUTH_TOKENS: tokenEntryLine("stack", tokens.api, "read+write"),
    ENTITLEMENT_AUTH_DISABLED: "false",
  });
  await startService("notification", nPort, {
    ...common,
    NOTIFICATION_DEBUG_API_ENABLED: "true",
    NOTIFICATION_DEBUG_API_TOKEN: tokens.debug,
  });
  printUsage(`http://127.0.0.1:${ePort}`, `http://127.0.0.1:${nPort}`);
  await new Promise<never>(() => {});
}

main().catch((error) => shutdown(`failed: ${error instanceof Error ? error.message : String(error)}`, 1));
