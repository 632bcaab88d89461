// compose.yml's observability profile as a user starts it: Prometheus comes up with the project, scrapes both
// services (Entitlement with the demo token) and has every rule of deploy/prometheus/alerts.yml loaded.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import * as containers from "../support/containers.ts";
import { uniqueName } from "../support/infra.ts";
import { freePort, runCommand } from "../support/process.ts";
import { waitUntil } from "../support/wait.ts";
import { enabled, serviceImages } from "./support.ts";

setDefaultTimeout(120_000);

const root = resolve(import.meta.dir, "../..");
const PROMETHEUS_PUBLIC = "prom/prometheus:v2.53.4";

async function composeCommand(): Promise<string[]> {
  if (process.env.COMPOSE) return process.env.COMPOSE.split(" ");
  const v2 = await runCommand(["docker", "compose", "version"], { cwd: root }).catch(() => undefined);
  return v2?.code === 0 ? ["docker", "compose"] : ["docker-compose"];
}

type Targets = { data: { activeTargets: { labels: { job: string }; health: string }[] } };
type Rules = { data: { groups: { rules: { name: string }[] }[] } };

describe.skipIf(!enabled)("compose.yml --profile observability", () => {
  const project = uniqueName("obs").replaceAll("_", "");
  const ports = { entitlement: freePort(), notification: freePort(), prometheus: freePort() };
  let compose: (args: string[]) => ReturnType<typeof runCommand>;

  afterAll(async () => {
    await compose?.(["down", "-v", "--timeout", "5"]);
  });

  test("Prometheus scrapes both services and loads the alert rules", async () => {
    const client = await containers.engine();
    if (!client) throw new Error("no container engine answers");
    const image = async (name: string, publicName: string) =>
      (await containers.resolveImage(client, name, publicName)) ?? "";
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ENTITLEMENT_HOST_PORT: String(ports.entitlement),
      NOTIFICATION_HOST_PORT: String(ports.notification),
      PROMETHEUS_HOST_PORT: String(ports.prometheus),
      ENTITLEMENT_IMAGE: serviceImages.entitlement,
      NOTIFICATION_IMAGE: serviceImages.notification,
      POSTGRES_IMAGE: await image("POSTGRES_IMAGE", containers.PUBLIC_IMAGES.postgres),
      NATS_IMAGE: await image("NATS_IMAGE", containers.PUBLIC_IMAGES.nats),
      PROMETHEUS_IMAGE: await image("PROMETHEUS_IMAGE", PROMETHEUS_PUBLIC),
    };
    const command = await composeCommand();
    compose = (args) =>
      runCommand([...command, "-p", project, "-f", "compose.yml", "--profile", "observability", ...args], {
        cwd: root,
        env,
        timeoutMs: 180_000,
      });
    const up = await compose(["up", "-d", "--no-build"]);
    expect(up.code, `${command.join(" ")} up:\n${up.stderr}`).toBe(0);

    const api = async <T>(path: string): Promise<T | undefined> =>
      fetch(`http://127.0.0.1:${ports.prometheus}/api/v1/${path}`)
        .then((r) => r.json() as Promise<T>)
        .catch(() => undefined);
    const targets = await waitUntil(
      async () => {
        const active = (await api<Targets>("targets"))?.data.activeTargets ?? [];
        return active.length === 2 && active.every((t) => t.health === "up") ? active : undefined;
      },
      "both targets up in Prometheus",
      180_000,
      1_000,
    );
    expect(targets.map((t) => t.labels.job).sort()).toEqual(["entitlement", "notification"]);
    const loaded = ((await api<Rules>("rules"))?.data.groups ?? []).flatMap((g) => g.rules.map((r) => r.name));
    const alerts = readFileSync(resolve(root, "deploy/prometheus/alerts.yml"), "utf8");
    const defined = [...alerts.matchAll(/- alert: (\w+)/g)].map((m) => m[1] as string);
    expect(loaded.sort()).toEqual(defined.sort());
  }, 300_000);
});
