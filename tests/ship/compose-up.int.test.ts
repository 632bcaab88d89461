// scripts/compose-up.sh refuses before starting anything when a host port is taken, and names the variable that
// moves it (compose would otherwise create half the project and fail on the port); an `up` that fails is undone:
// `down`, and the volumes that run created removed, while an earlier run's volume (its data) stays. Compose and
// docker are stand-in scripts here that record what they were asked: no engine is needed.
import { afterAll, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

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

/** A port nothing listens on (one the kernel gave out and took back). */
function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

test("a failed up is undone: down, and the volumes this run created are removed; an earlier run's volume stays", async () => {
  const dir = mkdtempSync(join(tmpdir(), "compose-up-"));
  try {
    const calls = join(dir, "calls.log");
    const volumes = join(dir, "volumes.txt");
    writeFileSync(volumes, "demo_natsdata\n"); // left by an earlier run, with its data
    const fake = (name: string, body: string) => {
      writeFileSync(join(dir, name), `#!/usr/bin/env bash\necho "${name} $*" >>'${calls}'\n${body}\n`);
      chmodSync(join(dir, name), 0o755);
    };
    // `up` creates the project's volume and then fails, as a pull of a missing image does.
    fake("compose", `case " $* " in *" up "*) echo demo_pgdata >>'${volumes}'; exit 1 ;; esac; exit 0`);
    fake(
      "docker",
      `case "$1 $2" in
  "volume ls") [[ "$*" == *"label=com.docker.compose.project=demo"* ]] && cat '${volumes}'; exit 0 ;;
  "volume rm") grep -vxF "$3" '${volumes}' >'${volumes}.new'; mv '${volumes}.new' '${volumes}'; exit 0 ;;
esac
exit 1`,
    );
    const proc = Bun.spawn(["bash", script], {
      env: {
        ...process.env,
        PATH: `${dir}:${process.env.PATH}`,
        COMPOSE: `${join(dir, "compose")} -p demo`,
        ENTITLEMENT_HOST_PORT: String(freePort()),
        NOTIFICATION_HOST_PORT: String(freePort()),
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect(code).toBe(1);
    expect(stderr).toContain("up failed: removing what it made");
    const log = readFileSync(calls, "utf8");
    expect(log).toContain("compose -p demo down");
    expect(log).toContain("docker volume rm demo_pgdata");
    expect(log).not.toContain("docker volume rm demo_natsdata");
    expect(readFileSync(volumes, "utf8")).toBe("demo_natsdata\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
