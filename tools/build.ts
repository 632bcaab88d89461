// `bun run build`: compiles each service into one standalone executable. Migrations are text imports, so
// they are inside the binary; the result runs with no Bun, no node_modules and no source tree beside it. The git commit
// is embedded for `--version`, /healthz and `build_info` (src/shared/build-info.ts).
//   bun run build [--target bun-linux-x64] [--only entitlement|notification] [--outdir dist]
import { mkdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

export const SERVICES = {
  entitlement: "src/entitlement/main.ts",
  notification: "src/notification/main.ts",
} as const;
export type ServiceName = keyof typeof SERVICES;

const root = resolve(import.meta.dir, "..");

/** The host's own target (bun-linux-x64 on the machines we ship to), so no other runtime has to be downloaded. */
export function defaultTarget(): string {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  return `bun-${process.platform}-${arch}`;
}

const COMMIT = /^[0-9a-f]{7,40}(-dirty)?$/;

/**
 * The commit to embed: `BUILD_COMMIT` when given (a Docker build has no .git: pass it as a build argument), else the
 * checkout's HEAD (12 hex digits, `-dirty` when tracked files differ), else "unknown" (a source tarball).
 */
export function sourceCommit(env: Record<string, string | undefined> = process.env): string {
  const given = env.BUILD_COMMIT?.trim();
  if (given) return COMMIT.test(given) ? given : "unknown";
  const git = (args: string[]) => Bun.spawnSync(["git", ...args], { cwd: root, stdout: "pipe", stderr: "ignore" });
  try {
    const head = git(["rev-parse", "--short=12", "HEAD"]);
    if (head.exitCode !== 0) return "unknown";
    const dirty = git(["status", "--porcelain", "--untracked-files=no"]).stdout.toString().trim() !== "";
    return `${head.stdout.toString().trim()}${dirty ? "-dirty" : ""}`;
  } catch {
    return "unknown"; // no git on this machine
  }
}

export async function buildService(
  name: ServiceName,
  options: { target: string; outdir: string /** Default: the service name. */; filename?: string },
): Promise<string> {
  const outfile = join(options.outdir, options.filename ?? name);
  const proc = Bun.spawn(
    [
      process.execPath,
      "build",
      "--compile",
      "--minify",
      "--sourcemap",
      // JavaScriptCore bytecode made at build time, so a start does not parse the bundle: exec → ready about 90 ms
      // sooner, for 6.6 MB more per executable (docs/decisions.md). Bytecode of an ES module needs --format=esm.
      "--bytecode",
      "--format=esm",
      `--target=${options.target}`,
      `--define=BUILD_COMMIT=${JSON.stringify(sourceCommit())}`,
      SERVICES[name],
      "--outfile",
      outfile,
    ],
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  if (code !== 0) throw new Error(`bun build of ${name} failed (exit ${code}):\n${stdout}${stderr}`);
  return outfile;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: {
      target: { type: "string", default: defaultTarget() },
      only: { type: "string", multiple: true },
      outdir: { type: "string", default: "dist" },
    },
  });
  const names = (values.only ?? Object.keys(SERVICES)) as ServiceName[];
  const unknown = names.filter((n) => !(n in SERVICES));
  if (unknown.length > 0) {
    console.error(`unknown service(s): ${unknown.join(", ")}; expected ${Object.keys(SERVICES).join(" or ")}`);
    return 2;
  }
  const outdir = resolve(root, values.outdir);
  mkdirSync(outdir, { recursive: true });
  for (const name of names) {
    const started = performance.now();
    const outfile = await buildService(name, { target: values.target, outdir });
    const mib = (statSync(outfile).size / 1024 / 1024).toFixed(1);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`built ${join(values.outdir, name)} (${values.target}, ${mib} MiB, ${seconds}s)`);
  }
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
