// The previous release's executables, built from git: a worktree of its commit, its own dependencies (its lockfile,
// frozen), its own `bun run build`. The result is kept in .data/upgrade/<commit>/ (ignored by git), so only the first
// run on a machine builds (about a minute: the install and two compiles); the worktree is removed once built.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import { runCommand } from "../support/process.ts";

const root = resolve(import.meta.dir, "../..");
/** Where what is made of a previous release is kept, per commit: ignored by git, so only a machine's first run makes it. */
export const cache = join(root, ".data", "upgrade");

export const git = (args: string[]) => Bun.spawnSync(["git", ...args], { cwd: root, stdout: "pipe", stderr: "pipe" });

/** The full id of `commit`, or why it cannot be built here (no git, or a clone without that history). */
export function resolveCommit(commit: string): { id: string } | { missing: string } {
  try {
    const found = git(["rev-parse", "--verify", "--quiet", `${commit}^{commit}`]);
    if (found.exitCode === 0) return { id: found.stdout.toString().trim() };
    return {
      missing: `commit ${commit} is not in this clone's history (a shallow clone? fetch it: git fetch --unshallow)`,
    };
  } catch {
    return { missing: "git is not installed" };
  }
}

async function step(command: string[], cwd: string): Promise<void> {
  const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" };
  const r = await runCommand(command, { cwd, env, timeoutMs: 600_000 });
  if (r.code !== 0) throw new Error(`${command.join(" ")} failed (exit ${r.code}) in ${cwd}:\n${r.stdout}${r.stderr}`);
}

/** Its dependencies: this tree's node_modules when both lockfiles are the same text, else its own frozen install. */
async function install(commit: string, source: string): Promise<void> {
  const lockfile = git(["show", `${commit}:bun.lock`]).stdout.toString();
  if (lockfile === readFileSync(join(root, "bun.lock"), "utf8")) {
    symlinkSync(join(root, "node_modules"), join(source, "node_modules"));
    return;
  }
  await step(["bun", "install", "--frozen-lockfile"], source);
}

async function build(commit: string, out: string): Promise<void> {
  const source = `${out}-src`;
  const partial = `${out}-${process.pid}`;
  git(["worktree", "remove", "--force", source]);
  rmSync(source, { recursive: true, force: true });
  try {
    // -f: a worktree left registered by a run that was killed (its folder gone) is taken over.
    await step(["git", "worktree", "add", "-f", "--detach", source, commit], root);
    await install(commit, source);
    await step(["bun", "run", "build", "--outdir", partial], source);
    rmSync(out, { recursive: true, force: true });
    renameSync(partial, out);
  } finally {
    rmSync(partial, { recursive: true, force: true });
    git(["worktree", "remove", "--force", source]);
    rmSync(source, { recursive: true, force: true });
  }
}

/** The paths of `commit`'s two executables, built once per machine and commit. */
export async function previousExecutables(commit: string): Promise<{ entitlement: string; notification: string }> {
  const out = join(cache, commit);
  const paths = { entitlement: join(out, "entitlement"), notification: join(out, "notification") };
  if (!existsSync(paths.entitlement) || !existsSync(paths.notification)) {
    mkdirSync(cache, { recursive: true });
    await build(commit, out);
  }
  return paths;
}
