// Where the integration tests find PostgreSQL and NATS, decided once per `bun test` run (tests/support/preload.ts), for
// each of the two on its own, in this order:
//   1. the URL in DATABASE_URL / NATS_URL when set;
//   2. Testcontainers, when a container engine answers and the image can be had (see containers.ts);
//   3. a server already answering on the default local port (127.0.0.1:5432 as postgres, 127.0.0.1:4222);
//   4. the machine's own PostgreSQL / nats-server binaries, started with their data in .data/test (as `bun run stack`);
//   5. nothing: one line saying what to install.
// TEST_BACKEND=testcontainers|local|binaries skips the others (CI uses it to prove one path and not fall back quietly).
import { join } from "node:path";
import { natsServerBinary, startKeptNats } from "../../tools/infra/nats.ts";
import { answers, INSTALL_HINT } from "../../tools/infra/net.ts";
import { postgresBin, startKeptPostgres } from "../../tools/infra/postgres.ts";
import * as containers from "./containers.ts";

export type Kind = "url" | "testcontainers" | "local" | "binaries";
export type Provided = { kind: Kind; name: string; url: string; stop?: () => Promise<void> };
export type Probes = { url?: string; engine: boolean; image?: string; localPort: boolean; binary?: string };

const KINDS: Kind[] = ["url", "testcontainers", "local", "binaries"];

/** The first usable backend for one service, given what was probed; undefined when there is none. */
export function choose(probes: Probes, forced?: Kind): Kind | undefined {
  const usable: Record<Kind, boolean> = {
    url: probes.url !== undefined,
    testcontainers: probes.engine && probes.image !== undefined,
    local: probes.localPort,
    binaries: probes.binary !== undefined,
  };
  if (forced) return usable[forced] ? forced : undefined;
  return KINDS.find((kind) => usable[kind]);
}

export function forcedKind(value = process.env.TEST_BACKEND): Kind | undefined {
  if (!value) return undefined;
  if (!(KINDS as string[]).includes(value)) throw new Error(`TEST_BACKEND must be one of ${KINDS.join(", ")}`);
  return value as Kind;
}

type Service = {
  label: string;
  envName: "DATABASE_URL" | "NATS_URL";
  imageEnv: "POSTGRES_IMAGE" | "NATS_IMAGE";
  publicImage: string;
  local: { host: string; port: number; url: string };
  binary: () => string | undefined;
  startContainer: (image: string) => Promise<containers.Started>;
  startBinary: (dataRoot: string) => Promise<{ name: string; url: string; stop: () => Promise<void> }>;
};

export const SERVICES: Service[] = [
  {
    label: "PostgreSQL",
    envName: "DATABASE_URL",
    imageEnv: "POSTGRES_IMAGE",
    publicImage: containers.PUBLIC_IMAGES.postgres,
    local: { host: "127.0.0.1", port: 5432, url: "postgres://postgres@127.0.0.1:5432/postgres" },
    binary: postgresBin,
    startContainer: containers.startPostgres,
    startBinary: startKeptPostgres,
  },
  {
    label: "NATS",
    envName: "NATS_URL",
    imageEnv: "NATS_IMAGE",
    publicImage: containers.PUBLIC_IMAGES.nats,
    local: { host: "127.0.0.1", port: 4222, url: "nats://127.0.0.1:4222" },
    binary: () => natsServerBinary,
    startContainer: containers.startNats,
    startBinary: startKeptNats,
  },
];

/** Where a URL points, without its credentials (for the one line the run prints). */
function hostOf(url: string): string {
  try {
    return new URL(url.split(",")[0] as string).host;
  } catch {
    return "a URL that does not parse";
  }
}

type Engine = Awaited<ReturnType<typeof containers.engine>>;

/** Probes only as far as needed: a given URL wins without touching the engine. */
async function probe(
  service: Service,
  engine: () => Promise<Engine>,
  forced?: Kind,
): Promise<Probes & { client?: Engine }> {
  const url = process.env[service.envName] || undefined;
  if (url && !forced) return { url, engine: false, localPort: false };
  const wants = (kind: Kind) => forced === undefined || forced === kind;
  const client = wants("testcontainers") ? await engine() : undefined;
  const image = client ? await containers.resolveImage(client, service.imageEnv, service.publicImage) : undefined;
  const localPort = wants("local") && (await answers(service.local.host, service.local.port));
  return {
    url,
    engine: client !== undefined,
    client,
    image,
    localPort,
    binary: wants("binaries") ? service.binary() : undefined,
  };
}

/** Decides and starts one service's backend; throws with what to install when there is none. */
export async function provide(service: Service, engine: () => Promise<Engine>, dataRoot: string): Promise<Provided> {
  const forced = forcedKind();
  const probes = await probe(service, engine, forced);
  const kind = choose(probes, forced);
  switch (kind) {
    case "url":
      return { kind, name: `${service.envName}, ${hostOf(probes.url as string)}`, url: probes.url as string };
    case "testcontainers": {
      await containers.reapOrphans(probes.client as NonNullable<Engine>);
      await containers.settleRyuk(probes.client as NonNullable<Engine>);
      const started = await service.startContainer(probes.image as string);
      return { kind, ...started };
    }
    case "local":
      return { kind, name: `${service.local.host}:${service.local.port}`, url: service.local.url };
    case "binaries": {
      const started = await service.startBinary(join(dataRoot, "test"));
      return { kind, ...started };
    }
    default:
      throw new Error(
        forced
          ? `TEST_BACKEND=${forced} cannot provide ${service.label} here`
          : `integration tests need ${service.label}: set ${service.envName}, start a Docker engine (Testcontainers), ` +
              `or install it (${INSTALL_HINT})`,
      );
  }
}
