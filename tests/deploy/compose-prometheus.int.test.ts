// The Prometheus of compose.yml's observability profile (deploy/prometheus/compose.yml), run here by the machine's own
// prometheus against both compiled services with the compose demo token: both targets are up (Entitlement's /metrics
// accepts the configured token) and every rule of alerts.yml is loaded. The container test brings up the profile
// itself (tests/containers/observability.int.test.ts); this one needs no container engine.
import { afterAll, beforeAll, expect, setDefaultTimeout } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { freePort } from "../ship/support.ts";
import { waitUntil } from "../support/wait.ts";
import { type Pair, startPair } from "./pair.ts";
import { testWithTool } from "./tools.ts";

const deploy = resolve(import.meta.dir, "../../deploy/prometheus");
const DEMO_TOKEN = "ent_compose-demo-token-change-me";
const test = testWithTool("prometheus", "prometheus");
// Stopping both services and dropping their database can outlast the default 5 s of a hook on a loaded machine.
setDefaultTimeout(60_000);

let pair: Pair | undefined;
let dir: string;
let prometheus: Bun.Subprocess | undefined;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "compose-prometheus-"));
});
afterAll(async () => {
  prometheus?.kill("SIGTERM");
  await prometheus?.exited;
  await pair?.close();
  rmSync(dir, { recursive: true, force: true });
});

type Targets = { data: { activeTargets: { labels: { job: string }; health: string }[] } };
type Rules = { data: { groups: { rules: { name: string }[] }[] } };

test("both services' targets are up with the demo token, and alerts.yml's rules are loaded", async () => {
  pair = await startPair({
    env: { ENTITLEMENT_AUTH_DISABLED: "false", ENTITLEMENT_AUTH_TOKENS: tokenEntryLine("demo", DEMO_TOKEN, "read") },
  });
  // The compose file as it is, but for the addresses: the services' names in the compose network are ports here.
  const config = readFileSync(join(deploy, "compose.yml"), "utf8")
    .replace("entitlement:8080", pair.entitlement.url.replace("http://", ""))
    .replace("notification:8081", pair.notification.url.replace("http://", ""));
  expect(config).not.toContain(":8080");
  writeFileSync(join(dir, "prometheus.yml"), config);
  writeFileSync(join(dir, "alerts.yml"), readFileSync(join(deploy, "alerts.yml")));
  const port = freePort();
  prometheus = Bun.spawn(
    [
      "prometheus",
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdout: "ignore", stderr: "ignore" },
  );
  const api = async <T>(path: string) => (await (await fetch(`http://127.0.0.1:${port}/api/v1/${path}`)).json()) as T;
  let targets: Targets["data"]["activeTargets"] = [];
  await waitUntil(
    async () => {
      targets = await api<Targets>("targets")
        .then((t) => t.data.activeTargets)
        .catch(() => []);
      return targets.length === 2 && targets.every((t) => t.health === "up") ? true : undefined;
    },
    "both targets up",
    60_000,
    500,
  );
  expect(targets.map((t) => t.labels.job).sort()).toEqual(["entitlement", "notification"]);
  const rules = (await api<Rules>("rules")).data.groups.flatMap((g) => g.rules.map((r) => r.name));
  const defined = [...readFileSync(join(deploy, "alerts.yml"), "utf8").matchAll(/- alert: (\w+)/g)].map(
    (m) => m[1] as string,
  );
  expect(defined.length).toBeGreaterThan(5);
  expect(rules.sort()).toEqual(defined.sort());
}, 180_000);
