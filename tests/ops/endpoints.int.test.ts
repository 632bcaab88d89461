// The webhook endpoint commands on real rows: list, disable and enable (what waited goes out again), replay; each safe
// to run twice.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { createSecretBox } from "../../src/notification/features/endpoints/secrets.ts";
import {
  ENDPOINTS_USAGE,
  endpointsSubcommand,
  parseEndpointsArgs,
  printEndpoints,
  replayEndpoint,
  setEnabled,
} from "../../src/notification/ops/endpoints.ts";
import { resealSecrets } from "../../src/notification/ops/reseal.ts";
import { endpointApp, endpointConfig, SECRET_KEY, storeNotifications } from "../notification/endpoints.helpers.ts";
import { useTestDatabase } from "../support/infra.ts";

setDefaultTimeout(30_000);

const f = useTestDatabase("ops_endpoints", { service: "notification" });

function ops() {
  const lines: string[] = [];
  return { lines, deps: { sql: f.sql, out: (l: string) => lines.push(l), config: endpointConfig() } };
}

describe("notification endpoints", () => {
  test("list, disable twice, enable twice: each prints what it did; enabling sends the FAILED deliveries of the failure run", async () => {
    const { call } = endpointApp(f.sql);
    const created = await call("POST", "/v1/webhook-endpoints", {
      url: "http://127.0.0.1:9/ops",
      event_types: ["MatchFound", "PointsGranted"],
    });
    const id = created.body.endpoint_id as string;
    const list = ops();
    expect(await printEndpoints(list.deps, 100)).toBe(0);
    expect(list.lines[0]).toContain(
      `${id} enabled url=http://127.0.0.1:9/ops types=MatchFound+PointsGranted pending=0 failed=0`,
    );
    expect(list.lines.at(-1)).toBe("1 webhook endpoint(s)");

    const off = ops();
    expect(await setEnabled(off.deps, id, false)).toBe(0);
    expect(await setEnabled(off.deps, id, false)).toBe(0);
    expect(off.lines).toEqual([
      `endpoint ${id}: enabled -> disabled`,
      `endpoint ${id} is already disabled: nothing to do`,
    ]);

    await f.sql`update webhook_endpoints set failing_since = now() - interval '1 hour' where endpoint_id = ${id}`;
    await f.sql`
      insert into webhook_deliveries (endpoint_id, notification_id, status, attempt_count, next_attempt_at, created_at)
      values (${id}, ${crypto.randomUUID()}, 'FAILED', 3, now(), now() - interval '10 minutes'),
             (${id}, ${crypto.randomUUID()}, 'FAILED', 3, now(), now() - interval '2 hours')`;
    const on = ops();
    expect(await setEnabled(on.deps, id, true)).toBe(0);
    expect(await setEnabled(on.deps, id, true)).toBe(0);
    expect(on.lines).toEqual([
      `endpoint ${id}: disabled -> enabled, what waited is sent`,
      `endpoint ${id} is already enabled: nothing to do`,
    ]);
    const statuses = await f.sql<{ status: string; attempt_count: number }[]>`
      select status, attempt_count from webhook_deliveries where endpoint_id = ${id} order by created_at`;
    expect([...statuses], "only the delivery that failed during the failure run is sent again").toEqual([
      { status: "FAILED", attempt_count: 3 },
      { status: "PENDING", attempt_count: 0 },
    ]);
    const missing = ops();
    expect(await setEnabled(missing.deps, crypto.randomUUID(), true)).toBe(1);
  });

  test("replay queues the window once, however often it runs", async () => {
    const { call } = endpointApp(f.sql);
    const since = new Date().toISOString();
    const created = await call("POST", "/v1/webhook-endpoints", {
      url: "http://127.0.0.1:9/replay",
      event_types: ["PointsGranted"],
    });
    const id = created.body.endpoint_id as string;
    await storeNotifications(f.sql, [{ type: "PointsGranted" }, { type: "PointsGranted" }, { type: "MatchFound" }]);
    await f.sql`update webhook_deliveries set status = 'SENT' where endpoint_id = ${id}`;
    const run = ops();
    const replay = { op: "replay" as const, id, since, onlyFailed: false };
    expect(await replayEndpoint(run.deps, replay)).toBe(0);
    expect(await replayEndpoint(run.deps, replay)).toBe(0);
    expect(run.lines[0]).toMatch(/^replay [0-9a-f-]{36}: 2 notification\(s\) of the window sent to /);
    const [row] = await f.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where endpoint_id = ${id} and status = 'PENDING'`;
    expect(row?.n).toBe(2);
  });

  test("reseal seals every secret with the current key, the secrets unchanged; a second run does nothing", async () => {
    const { call } = endpointApp(f.sql);
    const created = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/reseal" });
    const id = created.body.endpoint_id as string;
    const rotated = await call("POST", `/v1/webhook-endpoints/${id}/secret/rotate`, { overlap: "1h" });
    const newKey = "b".repeat(64);
    const config = endpointConfig({
      NOTIFICATION_ENDPOINT_SECRET_KEY: newKey,
      NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS: SECRET_KEY,
    });
    const first = ops();
    expect(await resealSecrets({ ...first.deps, config })).toBe(0);
    expect(first.lines).toContain(`endpoint ${id}: sealed with the current key`);
    const again = ops();
    expect(await resealSecrets({ ...again.deps, config })).toBe(0);
    expect(again.lines).toEqual(["every endpoint secret is sealed with the current key: nothing to do"]);
    const [row] = await f.sql<{ secret_ciphertext: string; previous_secret_ciphertext: string }[]>`
      select secret_ciphertext, previous_secret_ciphertext from webhook_endpoints where endpoint_id = ${id}`;
    const onlyNew = createSecretBox(Buffer.from(newKey, "hex"));
    expect(onlyNew.open(id, row?.secret_ciphertext ?? ""), "the same secret, under the new key").toBe(
      rotated.body.secret,
    );
    expect(onlyNew.open(id, row?.previous_secret_ciphertext ?? "")).toBe(created.body.secret);
  });

  test("arguments: anything else says what was wrong, then the usage line, and exits 2", async () => {
    expect(parseEndpointsArgs(["list"])).toEqual({ op: "list", limit: 100 });
    expect(() => parseEndpointsArgs(["replay", crypto.randomUUID(), "--until", "x"])).toThrow("missing --since");
    expect(() => parseEndpointsArgs(["enable", "not-a-uuid"])).toThrow("'not-a-uuid' is not a UUID");
    const errors: string[] = [];
    const original = console.error;
    console.error = (line: string) => errors.push(line);
    try {
      expect(await endpointsSubcommand({}).run(["frobnicate"])).toBe(2);
    } finally {
      console.error = original;
    }
    expect(errors).toEqual([
      `notification endpoints: unknown command 'frobnicate': expected list, disable, enable, replay or reseal\n${ENDPOINTS_USAGE}`,
    ]);
  });
});
