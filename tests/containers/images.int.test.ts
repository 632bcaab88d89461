// Both service images as they ship, on one Docker network with PostgreSQL and NATS containers: each runs with a
// read-only root file system as uid 65532, its HEALTHCHECK turns healthy and `healthcheck` exits 0, a grant made to
// the Entitlement container ends as a SENT notification in the Notification container, and `docker stop` ends each
// with exit code 0 well within the grace period. Prints each image's size and its container's start-to-ready time.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { GenericContainer, Network, type StartedNetwork, type StartedTestContainer, Wait } from "testcontainers";
import { newToken, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import * as containers from "../support/containers.ts";
import { waitUntil } from "../support/wait.ts";
import { enabled, type Figures, grantUntilSent, readyAfter, serviceImages } from "./support.ts";

// Containers on a vfs engine of a loaded 2-core machine: waits of a minute are normal.
setDefaultTimeout(120_000);

const GRACE_MS = 10_000;

/** GenericContainer with the one option the test needs and the builder lacks: a read-only root file system. */
class ServiceContainer extends GenericContainer {
  withReadOnlyRoot(): this {
    this.hostConfig.ReadonlyRootfs = true;
    return this;
  }
}

type Service = { name: "entitlement" | "notification"; port: number; container?: StartedTestContainer; url?: string };

describe.skipIf(!enabled)("the service images", () => {
  let network: StartedNetwork;
  const infra: containers.Started[] = [];
  const tokens = { api: newToken(), debug: `dbg-${crypto.randomUUID()}` };
  const services: Service[] = [
    { name: "entitlement", port: 8080 },
    { name: "notification", port: 8081 },
  ];
  const figures: Figures = {};

  async function start(service: Service, env: Record<string, string>): Promise<void> {
    const since = Date.now();
    service.container = await new ServiceContainer(serviceImages[service.name])
      .withReadOnlyRoot()
      .withNetwork(network)
      .withNetworkAliases(service.name)
      .withLabels({ [containers.OWNER_LABEL]: String(process.pid) })
      .withEnvironment({ LOG_LEVEL: "info", ...env })
      .withExposedPorts(service.port)
      .withWaitStrategy(Wait.forLogMessage(`${service.name} listening`))
      .withStartupTimeout(120_000)
      .start();
    service.url = `http://127.0.0.1:${service.container.getMappedPort(service.port)}`;
    figures[`${service.name} start-to-ready ms`] = await readyAfter(`${service.url}/readyz`, since);
  }

  beforeAll(async () => {
    const client = await containers.engine();
    if (!client) throw new Error("no container engine answers");
    await containers.settleRyuk(client);
    for (const [name, image] of Object.entries(serviceImages)) {
      const info = await client.container.dockerode.getImage(image).inspect();
      figures[`${name} image MB`] = Math.round(info.Size / 100_000) / 10;
    }
    network = await new Network().start();
    const pgImage = await containers.resolveImage(client, "POSTGRES_IMAGE", containers.PUBLIC_IMAGES.postgres);
    const natsImage = await containers.resolveImage(client, "NATS_IMAGE", containers.PUBLIC_IMAGES.nats);
    if (!pgImage || !natsImage) throw new Error("no PostgreSQL or NATS image (scripts/images/standins.sh makes them)");
    const pg = await containers.startPostgres(pgImage, { network, alias: "postgres" });
    const nats = await containers.startNats(natsImage, { network, alias: "nats" });
    infra.push(pg, nats);
    const shared = { DATABASE_URL: pg.inNetworkUrl, NATS_URL: nats.inNetworkUrl };
    await start(services[0] as Service, {
      ...shared,
      ENTITLEMENT_AUTH_TOKENS: tokenEntryLine("ci", tokens.api, "read+write"),
    });
    await start(services[1] as Service, {
      ...shared,
      NOTIFICATION_DEBUG_API_ENABLED: "true",
      NOTIFICATION_DEBUG_API_TOKEN: tokens.debug,
    });
  }, 300_000);

  // On a vfs engine, removing a container deletes a full copy of its file system: minutes on a loaded machine.
  afterAll(async () => {
    console.log(`container figures: ${JSON.stringify(figures)}`);
    for (const service of services) await service.container?.stop({ timeout: 1_000 }).catch(() => {});
    await Promise.all(infra.map((started) => started.stop().catch(() => {})));
    await network?.stop().catch(() => {});
  }, 180_000);

  test("each runs with a read-only root file system as uid 65532", async () => {
    const client = await containers.engine();
    for (const service of services) {
      const info = await client?.container.dockerode.getContainer(service.container?.getId() as string).inspect();
      expect(info?.HostConfig.ReadonlyRootfs).toBe(true);
      expect(info?.Config.User).toBe("65532:65532");
      const status = readFileSync(`/proc/${info?.State.Pid}/status`, "utf8");
      expect(status, `${service.name} runs as the image's user`).toMatch(/^Uid:\s+65532\s/m);
    }
  });

  test("each image's HEALTHCHECK turns healthy and `healthcheck` exits 0", async () => {
    const client = await containers.engine();
    for (const service of services) {
      const container = client?.container.dockerode.getContainer(service.container?.getId() as string);
      await waitUntil(
        async () => (await container?.inspect())?.State.Health?.Status === "healthy",
        `${service.name} healthy`,
        60_000,
        500,
      );
      const probe = await service.container?.exec(["/app/service", "healthcheck"]);
      expect(probe?.exitCode, probe?.output).toBe(0);
    }
  });

  test("a grant to the Entitlement container becomes a SENT notification in the Notification container", async () => {
    const [entitlement, notification] = services;
    await grantUntilSent(entitlement?.url as string, notification?.url as string, tokens);
  }, 120_000);

  test("docker stop ends each with exit code 0 within the grace period", async () => {
    const client = await containers.engine();
    for (const service of [...services].reverse()) {
      const since = Date.now();
      const stopped = await service.container?.stop({ timeout: GRACE_MS, remove: false });
      const took = Date.now() - since;
      service.container = undefined;
      const info = await client?.container.dockerode.getContainer(stopped?.getId() as string).inspect();
      await client?.container.dockerode.getContainer(stopped?.getId() as string).remove({ v: true });
      figures[`${service.name} stop ms`] = took;
      expect(info?.State.ExitCode, `${service.name} exit code after docker stop`).toBe(0);
      expect(took, `${service.name} stopped before the ${GRACE_MS} ms grace period ran out`).toBeLessThan(GRACE_MS);
    }
  }, 60_000);
});
