// A NATS that cannot be reached: the first connection is retried with backoff for as long as it takes, the outage is
// one warning in the log (not one per attempt, not none), and `nats_connected` shows it.
import { expect, test } from "bun:test";
import { Writable } from "node:stream";
import { createLogger } from "../../src/shared/logger.ts";
import { createRegistry, natsConnectedMetric } from "../../src/shared/metrics.ts";
import { openNatsLink } from "../../src/shared/nats.ts";
import { natsUrl } from "../support/infra.ts";

function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: createLogger({ level: "info", service: "test", destination }), lines };
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

test("an unreachable NATS is retried, logged once per outage and shown by nats_connected", async () => {
  const { log, lines } = capturedLogger();
  const port = await closedPort();
  const link = openNatsLink(
    { url: `nats://user:s3cret-pw@127.0.0.1:${port}`, connectionTimeoutMs: 200, name: "test" },
    log,
  );
  const registry = createRegistry("test");
  natsConnectedMetric(registry, link.connected);
  await Bun.sleep(2_500);
  const warnings = lines.filter((l) => l.msg === "NATS unreachable: retrying with backoff until it answers");
  expect(warnings.length, "one warning for the whole outage, after several attempts").toBe(1);
  expect(JSON.stringify(lines)).not.toContain("s3cret-pw");
  expect(await registry.metrics()).toMatch(/^nats_connected\{[^}]*\} 0$/m);
  await link.close();
  expect(
    lines.some((l) => l.level === "error"),
    "closing while connecting is no error",
  ).toBe(false);
});

test("a reachable NATS connects and nats_connected says 1", async () => {
  const { log, lines } = capturedLogger();
  const link = openNatsLink({ url: await natsUrl(), connectionTimeoutMs: 2_000, name: "test" }, log);
  const registry = createRegistry("test");
  natsConnectedMetric(registry, link.connected);
  expect(await link.get(AbortSignal.timeout(5_000))).toBeDefined();
  expect(await registry.metrics()).toMatch(/^nats_connected\{[^}]*\} 1$/m);
  expect(lines.some((l) => l.msg === "connected to NATS")).toBe(true);
  await link.close();
});
