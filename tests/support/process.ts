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

/** A TCP port nobody listens on right now (the local stack's helper). */
export { freePort } from "../../scripts/stack-infra.ts";

/** Reads a service's JSON log lines until its "<name> listening" line and returns the port; the rest is drained. */
export async function listeningPort(out: ReadableStream<Uint8Array>, name: string): Promise<number> {
  const reader = out.getReader();
  const pattern = new RegExp(`"port":(\\d+),"msg":"${name} listening"`);
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${name} exited before listening:\n${text}`);
    text += new TextDecoder().decode(value);
    const match = pattern.exec(text);
    if (match) {
      reader.releaseLock();
      void out.pipeTo(new WritableStream()).catch(() => {});
      return Number(match[1]);
    }
  }
}
