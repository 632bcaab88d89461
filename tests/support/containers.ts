// Testcontainers for the test run: one PostgreSQL and one NATS container, the images chosen as for the stack's NATS
// container (tools/infra/containers.ts: the environment's, the public ones, the local stand-ins). Containers
// carry the owning process id, so a run that was killed before it could stop its containers has them removed by the
// next run (Ryuk, Testcontainers' own reaper, is used only when its image can be had). A container that exits while
// it starts is removed at once, and the error says why (container-start.ts).
import type { StartedNetwork } from "testcontainers";
import { type Client, engine, loopback, natsContainer } from "../../tools/infra/containers.ts";
import { demuxLogs, type LeftBehind, START_LABEL, type StartCleanup, startExplained } from "./container-start.ts";

export {
  checkedImages,
  engine,
  PUBLIC_IMAGES,
  resolveImage,
  settleRyuk,
  standinImages,
} from "../../tools/infra/containers.ts";
export type Started = { name: string; url: string; stop: () => Promise<void> };
/** On a network, the container also answers other containers there by `alias` (`inNetworkUrl`). */
export type Placement = { network: StartedNetwork; alias: string };

export const OWNER_LABEL = "entitlement-notification.test-owner-pid";

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
  const base = natsContainer(image);
  if (placement) base.withNetwork(placement.network).withNetworkAliases(placement.alias);
  const startId = crypto.randomUUID();
  base.withLabels(startLabels(startId));
  const container = await startExplained(`NATS (${image})`, startId, () => base.start(), startCleanup);
  const host = loopback(container.getHost());
  return {
    name: `${image} at ${host}:${container.getMappedPort(4222)}`,
    url: `nats://${host}:${container.getMappedPort(4222)}`,
    inNetworkUrl: `nats://${placement?.alias}:4222`,
    stop: async () => void (await container.stop({ timeout: 10_000, removeVolumes: true })),
  };
}
