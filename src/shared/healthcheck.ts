// `<service> healthcheck`: asks the running service's own /readyz, so an image FROM scratch (no shell, no curl) can
// still have a container health check. Exit 0 when ready, 1 otherwise, 78 on bad configuration.
import { type Subcommand, withConfig } from "./cli.ts";
import { withoutArgs } from "./cli-args.ts";

export async function probeReadiness(port: number, timeoutMs = 3_000): Promise<number> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(timeoutMs) });
    if (response.status === 200) return 0;
    console.error(`not ready: /readyz answered ${response.status}`);
  } catch (error) {
    console.error(`not ready: ${error instanceof Error ? error.message : String(error)}`);
  }
  return 1;
}

/** `portOf` reads the service's configuration (and throws ConfigError when it is invalid). */
export function healthcheckSubcommand(service: string, portOf: () => number): Subcommand {
  return {
    name: "healthcheck",
    summary: "exit 0 when the service on PORT answers /readyz with 200 (container health checks)",
    run: withoutArgs(service, "healthcheck", () => withConfig(service, portOf, (port) => probeReadiness(port))),
  };
}
