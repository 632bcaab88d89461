// Runs once before the test files of a `bun test` run (bunfig.toml [test] preload): picks where PostgreSQL and NATS come
// from (backend.ts), says so in one line, and exports DATABASE_URL / NATS_URL so every file and every process a test
// spawns uses the same two servers. Containers start here, at the top level, which no test or hook timeout limits
// (Bun 1.4.4 applies neither bunfig's [test] timeout nor a preload's setDefaultTimeout to every file's hooks).
// Whatever this started (containers, local servers) is stopped after the last file, whether tests failed or not, and on
// Ctrl-C. A run of unit test files only needs neither and starts nothing.
import { afterAll } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Provided, provide, SERVICES } from "./backend.ts";
import { engine } from "./containers.ts";

/** The `bun test` command line (the preload's process.argv names the first test file, not the filters given). */
function commandLine(): string[] {
  try {
    return readFileSync("/proc/self/cmdline", "utf8").split("\0").filter(Boolean);
  } catch {
    return [];
  }
}

const filters = commandLine()
  .slice(1)
  .filter((arg) => !arg.startsWith("-") && arg !== "test");
const unitOnly = filters.length > 0 && filters.every((filter) => /\.unit\.test\.ts$/.test(filter));

const provided: Provided[] = [];

async function stopAll(): Promise<void> {
  const stopping = provided
    .splice(0)
    .map((p) =>
      p.stop?.().catch((error) => console.error(`test backend: could not stop ${p.name}: ${error?.message ?? error}`)),
    );
  await Promise.all(stopping);
}

if (!unitOnly) {
  let client: ReturnType<typeof engine> | undefined;
  const sharedEngine = () => (client ??= engine());
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => void stopAll().finally(() => process.exit(130)));
  }
  try {
    for (const service of SERVICES) {
      const p = await provide(service, sharedEngine, resolve(import.meta.dir, "../../.data"));
      provided.push(p);
      process.env[service.envName] = p.url;
    }
  } catch (error) {
    await stopAll();
    console.error(`test backend: ${(error as Error).message}`);
    process.exit(1);
  }
  console.log(`test backend: ${provided.map((p, i) => `${SERVICES[i]?.label} from ${p.kind} (${p.name})`).join("; ")}`);
  // Removing a container on a vfs engine deletes a full copy of its file system: allow for a loaded machine.
  afterAll(stopAll, 180_000);
}
