// Child processes and ports for tests that run the services or their tools.

export type Ran = { code: number; stdout: string; stderr: string };

/** Runs `cmd` to completion (killed after `timeoutMs`) and returns its exit code and output. */
export async function runCommand(
  cmd: string[],
  options: { env?: Record<string, string | undefined>; cwd?: string; timeoutMs?: number } = {},
): Promise<Ran> {
  const proc = Bun.spawn(cmd, { cwd: options.cwd, env: options.env, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), options.timeoutMs ?? 60_000);
  try {
    const [code, stdout, stderr] = await Promise.all([
      proc.exited,
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ]);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** A TCP port nobody listens on right now. */
export { freePort } from "../../tools/infra/net.ts";
