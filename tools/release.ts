// `bun run release`: the files a release publishes for VMs (docs/releasing.md): each service compiled for linux-x64
// and linux-arm64, named `<service>-<version>-linux-<arch>`, and SHA256SUMS in `sha256sum -c` format.
//   bun run release [--outdir dist/release]    (files land in <outdir>/<version>/)
// Refuses without a CHANGELOG.md section for the version, or when breaking API changes are recorded since the last
// release but the version does not say so (semver: a new major; a new minor while the major is 0).
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import pkg from "../package.json" with { type: "json" };
import { buildService, SERVICES, type ServiceName } from "./build.ts";
import { BASELINE_DOCS, readAccepted } from "./compat.ts";

const root = resolve(import.meta.dir, "..");
/**
 * Published name → Bun's compile target. x64 uses Bun's baseline runtime (x86-64-v2, 2008 on): the default one needs
 * AVX2, which VMs with a conservative CPU model do not expose, and it dies there with an illegal instruction.
 */
export const RELEASE_TARGETS = { "linux-x64": "bun-linux-x64-baseline", "linux-arm64": "bun-linux-arm64" } as const;

const parse = (version: string) => version.split(/[.+-]/).slice(0, 3).map(Number) as [number, number, number];

/** Whether `next` is a breaking release after `previous`: a new major, or a new minor while the major is 0. */
export function isBreakingBump(previous: string, next: string): boolean {
  const [pMajor, pMinor] = parse(previous);
  const [nMajor, nMinor] = parse(next);
  if (nMajor !== pMajor) return nMajor > pMajor;
  return nMajor === 0 && nMinor > pMinor;
}

/** The reasons this version may not be released yet; empty when it may. */
export function releaseProblems(version: string, changelog: string, baselineVersion: string, breaking: number) {
  const problems: string[] = [];
  const heading = new RegExp(`^## \\[?${version.replace(/\./g, "\\.")}\\]?( |$)`, "m");
  if (!heading.test(changelog)) problems.push(`CHANGELOG.md has no "## ${version}" section`);
  if (breaking > 0 && !isBreakingBump(baselineVersion, version)) {
    problems.push(
      `${breaking} breaking change(s) recorded in compat/accepted-breaking.json since ${baselineVersion}: ` +
        `${version} must be a breaking version (a new major; a new minor while the major is 0)`,
    );
  }
  return problems;
}

/** SHA256SUMS: one `<hex>  <file name>` line per file, what `sha256sum -c` reads. */
export function checksums(files: string[]): string {
  const line = (file: string) =>
    `${new Bun.CryptoHasher("sha256").update(readFileSync(file)).digest("hex")}  ${basename(file)}`;
  return `${files.map(line).join("\n")}\n`;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: { outdir: { type: "string", default: "dist/release" } },
  });
  const version = pkg.version;
  const baseline = JSON.parse(readFileSync(BASELINE_DOCS.entitlement, "utf8")).info.version as string;
  const problems = releaseProblems(
    version,
    readFileSync(join(root, "CHANGELOG.md"), "utf8"),
    baseline,
    readAccepted().length,
  );
  if (problems.length > 0) {
    for (const problem of problems) console.error(problem);
    return 1;
  }
  const outdir = resolve(root, values.outdir, version);
  if (existsSync(outdir)) rmSync(outdir, { recursive: true });
  mkdirSync(outdir, { recursive: true });
  const files: string[] = [];
  for (const [arch, target] of Object.entries(RELEASE_TARGETS)) {
    for (const name of Object.keys(SERVICES) as ServiceName[]) {
      const started = performance.now();
      // A target other than the host's makes Bun fetch that platform's runtime once (from the npm registry), into
      // its cache; later builds are offline.
      const file = await buildService(name, {
        target,
        outdir,
        filename: `${name}-${version}-${arch}`,
      });
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      console.log(`built ${relative(root, file)} (${(statSync(file).size / 1024 / 1024).toFixed(1)} MiB, ${seconds}s)`);
      // Bun writes the source map beside the executable (`--sourcemap`): published too, for reading stack traces.
      files.push(file, ...(existsSync(`${file}.map`) ? [`${file}.map`] : []));
    }
  }
  writeFileSync(join(outdir, "SHA256SUMS"), checksums(files));
  console.log(
    `wrote ${relative(root, join(outdir, "SHA256SUMS"))}; verify with: cd ${relative(root, outdir)} && sha256sum -c SHA256SUMS`,
  );
  return 0;
}

if (import.meta.main) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
