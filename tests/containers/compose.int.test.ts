// compose.yml as a user runs it, with Compose v2 (`docker compose`) or docker-compose 1.29 (COMPOSE picks one, e.g.
// COMPOSE=docker-compose): `up` with the built images comes up ready on free host ports, the demo token's grant becomes
// a SENT notification, and `down -v` leaves no container and no volume of the project behind.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { resolve } from "node:path";
import * as containers from "../support/containers.ts";
import { uniqueName } from "../support/infra.ts";
import { freePort, runCommand } from "../support/process.ts";
import { enabled, grantUntilSent, readyAfter, serviceImages } from "./support.ts";

// Containers on a vfs engine of a loaded 2-core machine: waits of a minute are normal.
setDefaultTimeout(120_000);

const root = resolve(import.meta.dir, "../..");
// The demo tokens compose.yml configures (see its comments).
const tokens = { api: "ent_compose-demo-token-change-me", debug: "compose-demo-debug-token-change-me" };

async function composeCommand(): Promise<string[]> {
  if (process.env.COMPOSE) return process.env.COMPOSE.split(" ");
  const v2 = await runCommand(["docker", "compose", "version"], { cwd: root }).catch(() => undefined);
  return v2?.code === 0 ? ["docker", "compose"] : ["docker-compose"];
}

describe.skipIf(!enabled)("compose.yml", () => {
  const project = uniqueName("ctr").replaceAll("_", "");
  const ports = { entitlement: freePort(), notification: freePort() };
  let compose: (args: string[]) => ReturnType<typeof runCommand>;

  afterAll(async () => {
    await compose?.(["down", "-v", "--timeout", "5"]);
  });

  test("up, a grant end to end, down -v leaves nothing behind", async () => {
    const client = await containers.engine();
    if (!client) throw new Error("no container engine answers");
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ENTITLEMENT_HOST_PORT: String(ports.entitlement),
      NOTIFICATION_HOST_PORT: String(ports.notification),
      ENTITLEMENT_IMAGE: serviceImages.entitlement,
      NOTIFICATION_IMAGE: serviceImages.notification,
      POSTGRES_IMAGE:
        (await containers.resolveImage(client, "POSTGRES_IMAGE", containers.PUBLIC_IMAGES.postgres)) ?? "",
      NATS_IMAGE: (await containers.resolveImage(client, "NATS_IMAGE", containers.PUBLIC_IMAGES.nats)) ?? "",
    };
    const command = await composeCommand();
    compose = (args) =>
      runCommand([...command, "-p", project, "-f", "compose.yml", ...args], { cwd: root, env, timeoutMs: 180_000 });

    const since = Date.now();
    const up = await compose(["up", "-d", "--no-build"]);
    expect(up.code, `${command.join(" ")} up:\n${up.stderr}`).toBe(0);
    const entitlement = `http://127.0.0.1:${ports.entitlement}`;
    const notification = `http://127.0.0.1:${ports.notification}`;
    await readyAfter(`${entitlement}/readyz`, since);
    const ready = await readyAfter(`${notification}/readyz`, since);
    console.log(`compose (${command.join(" ")}): up to both ready in ${ready} ms`);

    await grantUntilSent(entitlement, notification, tokens);

    const down = await compose(["down", "-v", "--timeout", "10"]);
    expect(down.code, `${command.join(" ")} down -v:\n${down.stderr}`).toBe(0);
    const label = `com.docker.compose.project=${project}`;
    const docker = client.container.dockerode;
    expect(await docker.listContainers({ all: true, filters: { label: [label] } })).toEqual([]);
    expect((await docker.listVolumes({ filters: { label: [label] } })).Volumes ?? []).toEqual([]);
  }, 300_000);
});
