// The bounded fault drill (`bun run drill --quick`, two to four minutes on a loaded machine) as part of `bun test`: it
// runs its own PostgreSQL and NATS processes (one machine; a 3-node NATS cluster; a primary with a synchronous standby),
// so it needs their binaries but neither DATABASE_URL nor NATS_URL.
import { afterAll, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

const root = resolve(import.meta.dir, "../..");
let drill: Subprocess<"ignore", "pipe", "pipe"> | undefined;

afterAll(() => {
  // SIGTERM lets the drill stop its processes and remove its folder.
  if (drill && drill.exitCode === null) drill.kill("SIGTERM");
});

test(
  "the quick fault drill loses and duplicates nothing in any scenario",
  async () => {
    drill = Bun.spawn([process.execPath, "run", join(root, "tests/drills/run.ts"), "--quick"], {
      cwd: root,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const [code, out, err] = await Promise.all([
      drill.exited,
      new Response(drill.stdout).text(),
      new Response(drill.stderr).text(),
    ]);
    if (code !== 0) console.error(`${out}\n${err}`);
    expect(out).toContain("| scenario");
    expect(code, "every scenario passes: nothing lost, nothing duplicated, no hung request").toBe(0);
  },
  { timeout: 600_000 },
);
