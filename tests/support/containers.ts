// Testcontainers for the test run: one PostgreSQL and one NATS container, image names from the environment, the public
// images when they are local or can be pulled, the local stand-ins (scripts/images/standins.sh) otherwise. Containers
// carry the owning process id, so a run that was killed before it could stop its containers has them removed by the
// next run (Ryuk, Testcontainers' own reaper, is used only when its image can be had). A container that exits while
// it starts is removed at once, and the error says why (container-start.ts).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { GenericContainer, getContainerRuntimeClient, ImageName, type StartedNetwork, Wait } from "testcontainers";
import { demuxLogs, type LeftBehind, START_LABEL, type StartCleanup, startExplained } from "./container-start.ts";

type Client = Awaited<ReturnType<typeof getContainerRuntimeClient>>;
export type Started = { name: string; url: string; stop: () => Promise<void> };
/** On a network, the container also answers other containers there by `alias` (`inNetworkUrl`). */
export type Placement = { network: StartedNetwork; alias: string };

export const OWNER_LABEL = "entitlement-notification.test-owner-pid";
const RYUK_IMAGE = "testcontainers/ryuk:0.14.0";

export const PUBLIC_IMAGES = { postgres: "postgres:16-alpine", nats: "nats:2.11-alpine" } as const;

/** VARIABLE=value lines of an env file of scripts/images; empty when there is no such file. */
function imagesEnv(name: string): Record<string, string> {
  const file = join(import.meta.dir, "../../scripts/images", name);
  if (!existsSync(file)) return {};
  const pairs = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => /^[A-Z_]+=/.test(line))
    .map((line) => line.split("=", 2) as [string, string]);
  return Object.fromEntries(pairs);
}

/** The stand-in names scripts/images/standins.sh tags its images with. */
export const standinImages = (): Record<string, string> => imagesEnv("standins.env");

/** The images scripts/images/standins.sh found to run on this machine (local.env, written by it, not committed). */
export const checkedImages = (): Record<string, string> => imagesEnv("local.env");

/** The container engine's client, or undefined when none answers within `timeoutMs`. */
export async function engine(timeoutMs = 10_000): Promise<Client | undefined> {
  const timeout = Bun.sleep(timeoutMs).then(() => undefined);
  return Promise.race([getContainerRuntimeClient().catch(() => undefined), timeout]);
}

async function available(client: Client, image: string): Promise<boolean> {
  const name = ImageName.fromString(image);
  if (await client.image.exists(name)) return true;
  return client.image.pull(name).then(
    () => true,
    () => false,
  );
}

/**
 * The image to run: `envName` when set, else the one standins.sh found to run when it is local, else the public image
 * when it is local or can be pulled, else the stand-in when it is local; undefined when none can be had.
 */
export async function resolveImage(client: Client, envName: string, publicName: string): Promise<string | undefined> {
  const given = process.env[envName];
  if (given) return given;
  const checked = checkedImages()[envName];
  if (checked && (await client.image.exists(ImageName.fromString(checked)))) return checked;
  if (await available(client, publicName)) return publicName;
  const standin = standinImages()[envName];
  if (standin && (await client.image.exists(ImageName.fromString(standin)))) return standin;
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes test containers whose owning process is gone (a run killed before its cleanup). */
export async function reapOrphans(client: Client): Promise<void> {
  const all = await client.container.list();
  for (const info of all) {
    const owner = Number(info.Labels?.[OWNER_LABEL]);
    if (!owner || owner === process.pid || alive(owner)) continue;
    await client.container
      .getById(info.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
  }
}

/** Ryuk stays on only when its image can be had; otherwise the owner label and `stop` do its job. */
export async function settleRyuk(client: Client): Promise<void> {
  if (process.env.TESTCONTAINERS_RYUK_DISABLED !== undefined) return;
  if (!(await available(client, RYUK_IMAGE))) process.env.TESTCONTAINERS_RYUK_DISABLED = "true";
}

const loopback = (host: string) => (host === "localhost" ? "127.0.0.1" : host);

/** The engine's view of one start's containers, for startExplained. */
async function startCleanup(): Promise<StartCleanup | undefined> {
  const docker = (await engine())?.container.dockerode;
  if (!docker) return undefined;
  return {
    leftBehind: async (label) => {
      const found = await docker.listContainers({ all: true, filters: { label: [label] } });
      return Promise.all(
        found.map(async (info): Promise<LeftBehind> => {
          const container = docker.getContainer(info.Id);
          const state = (await container.inspect().catch(() => undefined))?.State;
          const logs = await container.logs({ stdout: true, stderr: true, tail: 50, follow: false }).catch(() => "");
          const text = typeof logs === "string" ? logs : demuxLogs(new Uint8Array(logs as Buffer));
          return { id: info.Id, status: state?.Status ?? info.State, exitCode: state?.ExitCode, logs: text };
        }),
      );
    },
    remove: async (id) => docker.getContainer(id).remove({ force: true, v: true }),
  };
}

/** The labels of a test container: its owner, and the start it belongs to. */
const startLabels = (startId: string) => ({ [OWNER_LABEL]: String(process.pid), [START_LABEL]: startId });

export async function startPostgres(image: string, placement?: Placement): Promise<Started & { inNetworkUrl: string }> {
  const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
  const base = new PostgreSqlContainer(image);
  if (placement) base.withNetwork(placement.network).withNetworkAliases(placement.alias);
  const startId = crypto.randomUUID();
  base
    .withUsername("postgres")
    .withPassword("postgres")
    .withDatabase("postgres")
    .withLabels(startLabels(startId))
    // Like the machine's own server, which some tests count on (a URL with any password connects).
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
    // As many connections as the suite opens at once; durability is not what these tests measure.
    .withCommand(["postgres", "-c", "max_connections=400", "-c", "fsync=off", "-c", "full_page_writes=off"]);
  const container = await startExplained(`PostgreSQL (${image})`, startId, () => base.start(), startCleanup);
  const host = loopback(container.getHost());
  const port = container.getPort();
  return {
    name: `${image} at ${host}:${port}`,
    url: `postgres://postgres:postgres@${host}:${port}/postgres`,
    inNetworkUrl: `postgres://postgres:postgres@${placement?.alias}:5432/postgres`,
    stop: async () => void (await container.stop({ timeout: 10_000, removeVolumes: true })),
  };
}

/** No credentials (the @testcontainers/nats module always sets some, and every client here connects by URL only). */
export async function startNats(image: string, placement?: Placement): Promise<Started & { inNetworkUrl: string }> {
  const base = new GenericContainer(image);
  if (placement) base.withNetwork(placement.network).withNetworkAliases(placement.alias);
  const startId = crypto.randomUUID();
  base
    .withLabels(startLabels(startId))
    .withCommand(["-js", "-sd", "/tmp/jetstream"])
    .withExposedPorts(4222)
    .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
    .withStartupTimeout(120_000);
  const container = await startExplained(`NATS (${image})`, startId, () => base.start(), startCleanup);
  const host = loopback(container.getHost());
  return {
    name: `${image} at ${host}:${container.getMappedPort(4222)}`,
    url: `nats://${host}:${container.getMappedPort(4222)}`,
    inNetworkUrl: `nats://${placement?.alias}:4222`,
    stop: async () => void (await container.stop({ timeout: 10_000, removeVolumes: true })),
  };
}
