// The rules `bun run release` applies before building (docs/releasing.md), and its SHA256SUMS format.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { checksums, isBreakingBump, releaseProblems } from "../../tools/release.ts";

const work = mkdtempSync(join(tmpdir(), "release-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

test("a breaking version is a new major, or a new minor while the major is 0", () => {
  expect(isBreakingBump("1.4.2", "2.0.0")).toBe(true);
  expect(isBreakingBump("1.4.2", "1.5.0")).toBe(false);
  expect(isBreakingBump("0.1.0", "0.2.0")).toBe(true);
  expect(isBreakingBump("0.1.0", "0.1.1")).toBe(false);
  expect(isBreakingBump("0.9.0", "1.0.0")).toBe(true);
});

test("a release needs its CHANGELOG section, and a breaking version when breaks are recorded", () => {
  const changelog = "# Changelog\n\n## Unreleased\n\n## 0.2.0 - 2026-12-01\n\n## 0.1.0 - 2026-11-26\n";
  expect(releaseProblems("0.2.0", changelog, "0.1.0", 1)).toEqual([]);
  expect(releaseProblems("0.3.0", changelog, "0.2.0", 0)).toEqual(['CHANGELOG.md has no "## 0.3.0" section']);
  expect(releaseProblems("0.1.0", changelog, "0.1.0", 0)).toEqual([]);
  const [problem] = releaseProblems("0.1.1", `${changelog}## 0.1.1\n`, "0.1.0", 2);
  expect(problem).toContain("must be a breaking version");
});

test("the project's own version has its CHANGELOG section", () => {
  const changelog = readFileSync(resolve(import.meta.dir, "../../CHANGELOG.md"), "utf8");
  expect(changelog).toContain(`## ${pkg.version} `);
});

test("SHA256SUMS is what `sha256sum -c` verifies, and catches a changed file", () => {
  const files = ["entitlement-1.0.0-linux-x64", "notification-1.0.0-linux-x64"].map((name) => join(work, name));
  for (const [i, file] of files.entries()) writeFileSync(file, `executable ${i}`);
  writeFileSync(join(work, "SHA256SUMS"), checksums(files));
  const verify = () => Bun.spawnSync(["sha256sum", "-c", "SHA256SUMS"], { cwd: work });
  const verified = verify();
  expect(verified.exitCode, verified.stdout.toString()).toBe(0);
  writeFileSync(files[1] as string, "tampered");
  expect(verify().exitCode).not.toBe(0);
});
