// The stack's executables are rebuilt only when what goes into them changed: a digest of the sources, migrations,
// protobuf definitions, the lockfile and the build script is kept beside them in dist/, and a build whose digest
// matches is skipped (each build is two ~100 MiB executables and most of a minute).
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const INPUTS = ["src", "db", "proto", "patches", "package.json", "bun.lock", "tsconfig.json", "tools/build.ts"];
const STAMP = ".stack-sources.sha256";

function files(root: string, path: string): string[] {
  const full = join(root, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full)
    .sort()
    .flatMap((entry) => files(root, join(path, entry)));
}

/** The digest of every input file's path and content. */
export function sourcesDigest(root: string): string {
  const hasher = new Bun.CryptoHasher("sha256");
  for (const path of INPUTS.flatMap((input) => files(root, input))) {
    hasher.update(`${path}\0`);
    hasher.update(readFileSync(join(root, path)));
    hasher.update("\0");
  }
  return hasher.digest("hex");
}

/** Builds both executables into dist/ unless they are there and were built from the same inputs. */
export async function buildIfChanged(root: string, log: (line: string) => void): Promise<void> {
  const dist = join(root, "dist");
  const stamp = join(dist, STAMP);
  const digest = sourcesDigest(root);
  const built = ["entitlement", "notification"].every((name) => existsSync(join(dist, name)));
  if (built && existsSync(stamp) && readFileSync(stamp, "utf8").trim() === digest) {
    log("executables in dist/ are up to date with the sources: not rebuilding");
    return;
  }
  log("building both executables (sources changed since the last build, or none yet)…");
  const proc = Bun.spawn([process.execPath, "run", "build"], { cwd: root, stdout: "inherit", stderr: "inherit" });
  if ((await proc.exited) !== 0) throw new Error("bun run build failed");
  writeFileSync(stamp, `${digest}\n`);
}
