import { afterAll, expect, test } from "bun:test";
import { ConfigError } from "../../src/shared/config.ts";
import { healthcheckSubcommand } from "../../src/shared/healthcheck.ts";

let ready = true;
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (req) => new Response(null, { status: new URL(req.url).pathname === "/readyz" && ready ? 200 : 503 }),
});
afterAll(() => server.stop(true));

test("exit 0 when /readyz answers 200, 1 when it does not or nothing listens", async () => {
  const port = server.port as number;
  const command = healthcheckSubcommand("svc", () => port);
  expect(await command.run([])).toBe(0);
  ready = false;
  expect(await command.run([]), "a 503 is not healthy").toBe(1);
  const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const nothing = closed.port;
  closed.stop(true);
  expect(await healthcheckSubcommand("svc", () => nothing).run([]), "connection refused is not healthy").toBe(1);
});

test("usage and configuration errors have their own exit codes", async () => {
  expect(await healthcheckSubcommand("svc", () => 1).run(["extra"])).toBe(2);
  const broken = healthcheckSubcommand("svc", () => {
    throw new ConfigError(["PORT=x is invalid"]);
  });
  expect(await broken.run([])).toBe(78);
});
