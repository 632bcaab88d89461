// A service's `serve` as a child process for tests that read what it logs (secrets, permissions): its HTTP port once it
// listens, and everything it wrote to stdout and stderr once it exits.

/** The services' entry points, as `serve` and the executables' tests start them. */
export const ENTITLEMENT_MAIN = new URL("../../src/entitlement/main.ts", import.meta.url).pathname;
export const NOTIFICATION_MAIN = new URL("../../src/notification/main.ts", import.meta.url).pathname;

export type ServedProcess = {
  child: Bun.Subprocess;
  /** The HTTP port from its "<name> listening" line; rejects if it exits first. */
  port: Promise<number>;
  /** stdout and stderr, complete once the process has exited. */
  output: Promise<string>;
};

/** `bun <main> serve` on 127.0.0.1 and a port of its choosing, with only PATH and `env` in its environment. */
export function serve(main: string, name: string, env: Record<string, string>): ServedProcess {
  const child = Bun.spawn(["bun", main, "serve"], {
    env: { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "debug", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const port = Promise.withResolvers<number>();
  const pattern = new RegExp(`"port":(\\d+),"msg":"${name} listening"`);
  const stdout = (async () => {
    let text = "";
    for await (const chunk of child.stdout) {
      text += new TextDecoder().decode(chunk);
      const match = pattern.exec(text);
      if (match) port.resolve(Number(match[1]));
    }
    port.reject(new Error(`${name} exited before listening:\n${text}`));
    return text;
  })();
  const output = Promise.all([stdout, new Response(child.stderr).text()]).then((parts) => parts.join("\n"));
  port.promise.catch(() => {});
  return { child, port: port.promise, output };
}
