// The previous release's own source, read from git: its src/ and db/ as it shipped them, extracted once per machine
// and commit into .data/upgrade/<commit>-source/ (beside its built executables, previous-build.ts). The schema it
// applied, its request hashes, its write path and its reply logic are imported from there, never copied: what stands
// for replicas already deployed cannot drift from them, nor follow a later change of src/ or db/. Its imports of
// packages resolve to this tree's node_modules (the folder is inside the repository); a release only adds packages
// to the lockfile, so those are the versions it shipped with.
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cache, git, resolveCommit } from "./previous-build.ts";

/** The commit of the previous release: its source is imported from git, and the executables test builds it. */
export const PREVIOUS_COMMIT = "640b121";

/** The full id of the previous release's commit; a clone without it (a shallow one) fails here, saying so. */
export function previousCommitId(): string {
  const commit = resolveCommit(PREVIOUS_COMMIT);
  if ("missing" in commit)
    throw new Error(`tests/upgrade needs the previous release ${PREVIOUS_COMMIT}: ${commit.missing}`);
  return commit.id;
}

function extracted(id: string): string {
  const folder = join(cache, `${id}-source`);
  if (existsSync(folder)) return folder;
  // Extracted aside and renamed into place, so that a run killed halfway or a run beside this one never sees half.
  const partial = `${folder}-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  try {
    const archive = git(["archive", "--format=tar", "-o", `${partial}/source.tar`, id, "src", "db"]);
    if (archive.exitCode !== 0) throw new Error(`git archive ${id} failed: ${archive.stderr.toString()}`);
    const tar = Bun.spawnSync(["tar", "-xf", "source.tar"], { cwd: partial, stderr: "pipe" });
    if (tar.exitCode !== 0) throw new Error(`tar of ${id}'s source failed: ${tar.stderr.toString()}`);
    rmSync(join(partial, "source.tar"));
    renameSync(partial, folder);
  } catch (error) {
    if (!existsSync(folder)) throw error;
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return folder;
}

/** The folder holding the previous release's src/ and db/. */
export const previousSourceFolder = (): string => extracted(previousCommitId());

/**
 * A module of the previous release, by its path in that release (`src/…`). `T` is what the caller uses of it: the
 * types are not checked against the old source, so a caller names only what it calls.
 */
export async function previousModule<T>(path: string): Promise<T> {
  return (await import(join(previousSourceFolder(), path))) as T;
}
