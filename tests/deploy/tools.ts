// Tests that need a tool from the operating system (systemd-analyze, promtool, strace). .ci/run installs them; where
// one is missing, a CI run fails (so a green CI always means the check ran) and a developer run skips the test with a
// warning naming the Debian package, never a silent pass.
import { test } from "bun:test";

type Body = () => Promise<void> | void;

export function testWithTool(tool: string, aptPackage: string) {
  if (Bun.which(tool)) return (name: string, body: Body, timeoutMs?: number) => test(name, body, timeoutMs);
  const why = `${tool} is not installed (apt-get install ${aptPackage}; .ci/run installs it)`;
  if (process.env.CI) {
    return (name: string, _body: Body) =>
      test(name, () => {
        throw new Error(why);
      });
  }
  console.warn(`SKIPPED: ${why}`);
  return (name: string, body: Body, timeoutMs?: number) => test.skip(`${name} [skipped: ${why}]`, body, timeoutMs);
}

/** Runs a command to completion: exit code and both outputs. */
export function run(cmd: string[], cwd?: string): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}
