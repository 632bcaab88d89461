// The Dockerfile's builder stage sees only what it COPYs from the build context: those files alone must be enough to
// install from the lockfile (patches included) and compile the service. No Docker engine runs here, so the stage's
// inputs are assembled in an empty folder and its two RUN steps are run there.
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCommand } from "../support/process.ts";
import { builderContextPaths } from "./dockerfile.ts";

setDefaultTimeout(180_000);

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "builder-stage-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the builder stage's COPY inputs install from the lockfile and build the executable", async () => {
  const paths = builderContextPaths(root);
  expect(paths).toContain("bun.lock");
  for (const path of paths) cpSync(join(root, path), join(dir, path), { recursive: true });
  const run = async (cmd: string[]) => {
    const r = await runCommand(cmd, { cwd: dir, timeoutMs: 150_000 });
    expect(r.code, `${cmd.join(" ")}:\n${r.stdout}\n${r.stderr}`).toBe(0);
  };
  await run(["bun", "install", "--frozen-lockfile"]);
  await run(["bun", "run", "build", "--only", "entitlement", "--target", "bun-linux-x64"]);
  expect(existsSync(join(dir, "dist", "entitlement"))).toBe(true);
});
