// Tests that need a tool from the operating system (systemd-analyze, promtool, strace): see tests/support/required.ts.
import { testRequiring } from "../support/required.ts";

export function testWithTool(tool: string, aptPackage: string) {
  return testRequiring(
    Bun.which(tool) ? undefined : `${tool} is not installed (apt-get install ${aptPackage}; .ci/run installs it)`,
  );
}

/** Runs a command to completion: exit code and both outputs. */
export function run(cmd: string[], cwd?: string): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}
