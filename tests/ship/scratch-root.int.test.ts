// The FROM scratch image, without a Docker engine: the root the builder stage assembles (tools/image-root.ts) is
// assembled on the host in an empty folder, /proc and /dev are bind-mounted (as a container runtime would provide
// them), and the binary runs there under chroot as the image's non-root user, up to a 200 from /healthz, a healthcheck
// that exits 0 and a clean exit 0 on SIGTERM. (CI also builds and runs the real images: tests/containers/.)
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import pkg from "../../package.json" with { type: "json" };
import { assembleRoot, SERVICE_PATH, sharedLibraries } from "../../tools/image-root.ts";
import { type DatabaseFixture, natsUrl, openTestDatabase, uniqueName } from "../support/infra.ts";
import { builderRuns, readFinalStage } from "./dockerfile.ts";
import { builtBinary, freePort, repoRoot, waitForOk } from "./support.ts";

const stage = readFinalStage(repoRoot, { SERVICE: "entitlement" });
const isRoot = process.getuid?.() === 0;
if (!isRoot)
  console.warn("scratch-root: skipped, chroot and mount --bind need root (run the tests as root to prove it)");

describe("the Dockerfile's final stage", () => {
  test("is FROM scratch, runs as a non-root user and copies the one root the builder assembles", () => {
    expect(stage.base).toBe("scratch");
    expect(stage.user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    expect(stage.copies).toEqual([{ from: "builder", src: "/rootfs/", dst: "/" }]);
    expect(builderRuns(repoRoot).some((run) => run.includes("tools/image-root.ts") && run.includes("/rootfs"))).toBe(
      true,
    );
    expect(stage.entrypoint).toEqual([SERVICE_PATH]);
    expect(stage.healthcheck).toEqual([SERVICE_PATH, "healthcheck"]);
  });

  test("the assembled root holds the executable, the CA bundle and every library ldd lists", async () => {
    const binary = await builtBinary("entitlement");
    const root = mkdtempSync(join(tmpdir(), "image-root-"));
    try {
      assembleRoot(binary, root);
      const expected = [...sharedLibraries(binary), SERVICE_PATH, "/etc/ssl/certs/ca-certificates.crt"];
      expect(expected.filter((path) => !existsSync(join(root, path)))).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 240_000);
});

function mountedUnder(root: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((p) => p === root || p.startsWith(`${root}/`));
}

/** chroot and mount live in sbin, which a non-login PATH may lack. */
const tool = (name: string) =>
  Bun.which(name, { PATH: `${process.env.PATH ?? ""}:/usr/sbin:/sbin:/usr/bin:/bin` }) ?? name;

function sh(args: string[]): { ok: boolean; error: string } {
  const r = Bun.spawnSync([tool(args[0] as string), ...args.slice(1)], { stderr: "pipe" });
  return { ok: r.exitCode === 0, error: r.stderr.toString().trim() };
}

describe.skipIf(!isRoot)("the entitlement binary in a scratch root", () => {
  let root: string;
  let f: DatabaseFixture;
  // Its own stream on the shared NATS (Entitlement creates the stream at start), deleted afterwards.
  const stream = uniqueName("scratch-events");

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "scratch-root-"));
    assembleRoot(await builtBinary("entitlement"), root);
    f = await openTestDatabase("scratch", { service: "entitlement" });
  }, 240_000);

  afterAll(async () => {
    for (const mount of mountedUnder(root).reverse()) sh(["umount", mount]);
    for (const mount of mountedUnder(root).reverse()) sh(["umount", "-l", mount]);
    // Never delete through a bind mount of the host's /dev or /proc.
    if (mountedUnder(root).length === 0) rmSync(root, { recursive: true, force: true });
    else console.error(`scratch-root: left ${root} in place, mounts remain: ${mountedUnder(root).join(", ")}`);
    await f?.close();
    const nc = await connect({ servers: await natsUrl() });
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => {});
    await nc.close();
  });

  test("serves /healthz as uid 65532 and exits 0 on SIGTERM", async () => {
    for (const dir of ["proc", "dev"]) {
      mkdirSync(join(root, dir), { recursive: true });
      const mounted = sh(["mount", "--bind", `/${dir}`, join(root, dir)]);
      if (!mounted.ok) {
        console.warn(`scratch-root: skipped, mount --bind /${dir} failed: ${mounted.error}`);
        return;
      }
    }
    const port = freePort();
    const proc = Bun.spawn([tool("chroot"), `--userspec=${stage.user}`, root, ...stage.entrypoint, ...stage.cmd], {
      env: {
        ...stage.env,
        DATABASE_URL: f.db.url,
        NATS_URL: await natsUrl(),
        ENTITLEMENT_NATS_STREAM: stream,
        ENTITLEMENT_NATS_SUBJECT: `${stream}.events`,
        PORT: String(port),
        HOST: "127.0.0.1",
        HOSTNAME: "scratch-test",
        ENTITLEMENT_AUTH_DISABLED: "true",
        LOG_LEVEL: "info",
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    const output = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    try {
      const health = await waitForOk(`http://127.0.0.1:${port}/healthz`, 60_000, () => proc.exitCode === null).catch(
        async (error) => {
          proc.kill("SIGKILL");
          throw new Error(`${error.message}\n${(await output).join("\n")}`);
        },
      );
      expect(await health.json(), "/healthz names the build that runs").toEqual({
        status: "UP",
        service: "entitlement",
        version: pkg.version,
        commit: expect.stringMatching(/^[0-9a-f]{12}(-dirty)?$/),
        bun: Bun.version,
      });
      const status = readFileSync(`/proc/${proc.pid}/status`, "utf8");
      expect(status, "the service runs as the image's user").toMatch(/^Uid:\s+65532\s/m);
      await waitForOk(`http://127.0.0.1:${port}/readyz`, 60_000, () => proc.exitCode === null);
      const probe = Bun.spawnSync([tool("chroot"), `--userspec=${stage.user}`, root, ...stage.healthcheck], {
        env: { ...stage.env, PORT: String(port) },
        stderr: "pipe",
      });
      expect(probe.exitCode, `the image's healthcheck: ${probe.stderr.toString()}`).toBe(0);
      proc.kill("SIGTERM");
      const code = await Promise.race([proc.exited, Bun.sleep(30_000).then(() => "timeout")]);
      expect(code, `exit after SIGTERM\n${(await output).join("\n")}`).toBe(0);
    } finally {
      if (proc.exitCode === null) proc.kill("SIGKILL");
    }
  }, 120_000);
});
