// Containers from the engine Testcontainers finds (DOCKER_HOST, the Docker socket, a Testcontainers config): the test
// backend's PostgreSQL and NATS (tests/support/containers.ts), and the stack's NATS when the machine has no nats-server.
// Image names come from the environment, else the image scripts/images/standins.sh found to run here, else the public
// image when it is local or can be pulled, else the local stand-in.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { GenericContainer, getContainerRuntimeClient, ImageName, Wait } from "testcontainers";

export type Client = Awaited<ReturnType<typeof getContainerRuntimeClient>>;

export const PUBLIC_IMAGES = { postgres: "postgres:16-alpine", nats: "nats:2.11-alpine" } as const;
const RYUK_IMAGE = "testcontainers/ryuk:0.14.0";

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

/** True when `image` is local or could be pulled. */
export async function available(client: Client, image: string): Promise<boolean> {
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

/** Ryuk stays on only when its image can be had; otherwise whoever started a container stops it (and the tests' owner label finds what a killed run left). */
export async function settleRyuk(client: Client): Promise<void> {
  if (process.env.TESTCONTAINERS_RYUK_DISABLED !== undefined) return;
  if (!(await available(client, RYUK_IMAGE))) process.env.TESTCONTAINERS_RYUK_DISABLED = "true";
}

/** A nats-server with JetStream in `image`, its client port exposed; not started. */
export function natsContainer(image: string): GenericContainer {
  return new GenericContainer(image)
    .withCommand(["-js", "-sd", "/tmp/jetstream"])
    .withExposedPorts(4222)
    .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
    .withStartupTimeout(120_000);
}

export const loopback = (host: string) => (host === "localhost" ? "127.0.0.1" : host);
