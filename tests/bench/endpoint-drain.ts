// The endpoint delivery worker on a backlog: NOTIFICATIONS stored first for ENDPOINTS receivers (a child process, as in
// endpoints.ts), then the worker started and timed until every delivery of the answering receivers is SENT. Reports
// the drain (deliveries/s) and what each delivery cost: CPU of the worker's process and of the receivers' (from
// process.cpuUsage and /proc), CPU of the database's backends serving the worker (from /proc, when PostgreSQL runs on
// this machine), and transactions (pg_stat_database). Where endpoints.ts measures latency at a rate, this measures
// cost, which is what bounds the rate. With --https the receivers serve TLS with a certificate for receiver.example
// from a CA made for the run (trusted through NODE_EXTRA_CA_CERTS, which is read at start: the program runs itself
// again with it), and the endpoints' URLs name that host, resolved to 127.0.0.1: the https request path.
//   DATABASE_URL=postgres://... bun run tests/bench/endpoint-drain.ts [--notifications 2000] [--endpoints 10] [--hanging]
//     [--https]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadNotificationConfig } from "../../src/notification/config.ts";
import { insertEndpoint } from "../../src/notification/features/endpoints/queries.ts";
import { createSecretBox, newSigningSecret } from "../../src/notification/features/endpoints/secrets.ts";
import { storeEvents } from "../../src/notification/intake/consumer/batch.ts";
import { createNotificationMetrics } from "../../src/notification/metrics.ts";
import { endpointDeliveryWorker } from "../../src/notification/work/endpoints/build.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { createTestCa } from "../support/certificates.ts";
import { createTestDatabase } from "../support/infra.ts";
import { processCpuSeconds } from "./cpu.ts";

const { values } = parseArgs({
  options: {
    notifications: { type: "string", default: "2000" },
    endpoints: { type: "string", default: "10" },
    hanging: { type: "boolean", default: false },
    https: { type: "boolean", default: false },
  },
});

/** The receivers' certificate and key when --https, set by the run that made them (see the header). */
const tls = values.https ? { cert: process.env.DRAIN_TLS_CERT, key: process.env.DRAIN_TLS_KEY } : undefined;
if (tls && !tls.cert) {
  const dir = mkdtempSync(join(tmpdir(), "endpoint-drain-tls-"));
  try {
    const ca = await createTestCa(dir);
    const pair = await ca.server("receiver", "DNS:receiver.example");
    const child = Bun.spawn([process.execPath, "run", import.meta.path, ...Bun.argv.slice(2)], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: ca.ca, DRAIN_TLS_CERT: pair.cert, DRAIN_TLS_KEY: pair.key },
      stdout: "inherit",
      stderr: "inherit",
    });
    process.exitCode = await child.exited;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit();
}
const notifications = Number(values.notifications);
const endpointCount = Number(values.endpoints);
const KEY = Buffer.alloc(32, 1);

/** CPU milliseconds a process has used (user + system), or 0 when /proc does not show it. */
const cpuMsOf = (pid: number) => processCpuSeconds(pid) * 1000;

async function backendCpuMs(sql: Sql, database: string): Promise<Map<number, number>> {
  const rows = await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${database}`;
  return new Map(rows.map((r) => [r.pid, cpuMsOf(r.pid)]));
}

async function setUp(sql: Sql) {
  const child = Bun.spawn(["bun", "run", `${import.meta.dir}/endpoint-receivers.ts`], {
    env: {
      ...process.env,
      COUNT: String(endpointCount),
      HANGING: values.hanging ? String(endpointCount - 1) : "",
      ...(tls ? { TLS_CERT: tls.cert, TLS_KEY: tls.key } : {}),
    },
    stdout: "pipe",
  });
  const { value } = await child.stdout.getReader().read();
  const { ports } = JSON.parse(new TextDecoder().decode(value)) as { ports: number[] };
  const box = createSecretBox(KEY);
  for (const port of ports) {
    const endpointId = crypto.randomUUID();
    const secretCiphertext = box.seal(endpointId, newSigningSecret());
    const url = tls ? `https://receiver.example:${port}/hook` : `http://127.0.0.1:${port}/hook`;
    await insertEndpoint(sql, {
      ...{ endpointId, url, description: "drain", eventTypes: null, enabled: true, secretCiphertext },
      now: new Date(),
    });
  }
  for (let i = 0; i < notifications; i += 500) {
    const events = Array.from({ length: Math.min(500, notifications - i) }, (_, k) => ({
      eventId: crypto.randomUUID(),
      notifications: [
        { userId: `u${i + k}`, type: "EntitlementGranted" as const, occurredAt: new Date().toISOString(), payload: {} },
      ],
    }));
    await storeEvents(sql, events, new Date());
  }
  return child;
}

async function drain(sql: Sql, database: string, receiverPid: number) {
  const expected = notifications * (endpointCount - (values.hanging ? 1 : 0));
  const commits = async () =>
    (await sql<{ n: number }[]>`select xact_commit::int as n from pg_stat_database where datname = ${database}`)[0]
      ?.n ?? 0;
  const worker = endpointDeliveryWorker({
    config: loadNotificationConfig({
      NOTIFICATION_ENDPOINT_SECRET_KEY: KEY.toString("hex"),
      NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
    }),
    sql,
    log: silentLogger,
    now: () => new Date(),
    metrics: createNotificationMetrics(createRegistry("drain")),
    waker: new Waker(),
    workerId: "drain",
    resolve: async () => [{ address: "127.0.0.1", family: 4 }],
  });
  const controller = new AbortController();
  const before = {
    backends: await backendCpuMs(sql, database),
    commits: await commits(),
    receivers: cpuMsOf(receiverPid),
  };
  const cpu = process.cpuUsage();
  const started = performance.now();
  const running = worker?.run(controller.signal);
  let sent = 0;
  while (sent < expected && performance.now() - started < 120_000) {
    await Bun.sleep(250);
    [{ n: sent } = { n: 0 }] = await sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where status = 'SENT'`;
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  let backends = 0;
  for (const [pid, ms] of await backendCpuMs(sql, database)) backends += ms - (before.backends.get(pid) ?? 0);
  const receivers = cpuMsOf(receiverPid) - before.receivers;
  controller.abort();
  await running;
  await Bun.sleep(600); // pg_stat_database is updated by the backends within half a second
  await sql`select pg_stat_clear_snapshot()`;
  const perDelivery = (x: number) => (x / sent).toFixed(3);
  console.log(
    `${sent}/${expected} deliveries SENT in ${seconds.toFixed(1)} s: ${Math.round(sent / seconds)}/s` +
      `${values.hanging ? " (one endpoint hanging)" : ""}${tls ? " over https" : ""}\n` +
      `per delivery: worker ${perDelivery((used.user + used.system) / 1000)} ms CPU, database backends ` +
      `${perDelivery(backends)} ms (0 when PostgreSQL is not on this machine), receivers ${perDelivery(receivers)} ms, ` +
      `${perDelivery((await commits()) - before.commits)} transactions`,
  );
}

const db = await createTestDatabase("bench_endpoint_drain");
const sql = createSql({ url: db.url, schema: "notification", max: 10, applicationName: "bench-endpoint-drain" });
const receivers = await setUp(sql);
try {
  await drain(sql, new URL(db.url).pathname.slice(1), receivers.pid);
} finally {
  receivers.kill();
  await sql.end({ timeout: 5 });
  await db.drop();
}
