// scripts/compose-up.sh refuses before starting anything when a host port is taken, and names the variable that
// moves it (compose would otherwise create half the project and fail on the port).
import { afterAll, expect, test } from "bun:test";
import { resolve } from "node:path";

const script = resolve(import.meta.dir, "../../scripts/compose-up.sh");
const busy = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
afterAll(() => busy.stop(true));

test("a taken host port stops compose-up.sh before compose runs, naming the variable", async () => {
  const proc = Bun.spawn(["bash", script], {
    // COMPOSE=false: were compose ever run, it would fail without the message below.
    env: { ...process.env, COMPOSE: "false", ENTITLEMENT_HOST_PORT: String(busy.port), NOTIFICATION_HOST_PORT: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  expect(code).toBe(1);
  expect(stderr).toContain(`port ${busy.port} is taken`);
  expect(stderr).toContain("set ENTITLEMENT_HOST_PORT to a free port");
});
