// How the tests are built, enforced rather than remembered: a test file empties its tables with the reset of its
// service (resetService in tests/support/infra.ts, whose table list comes from the schema), never with a truncate
// list of its own that misses the next table; and nothing under tests/ imports scripts/ (shell scripts only): the code
// tests share with the stack, the drills and the bench lives in tools/, which imports neither tests/ nor scripts/; and a
// test file takes its database from a fixture, never by cloning the template itself.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;
/** A tagged SQL template or an `unsafe` call that starts with truncate, or a fixture option listing tables to empty. */
const TRUNCATE = /(?:\w`\s*truncate\b|\bunsafe\(\s*[`"']\s*truncate\b|\btruncate\s*:\s*\[)[^\n]*/gi;

/** Every relative import of `file`, as a path from the repository root. */
export function importsOf(file: string, text: string): string[] {
  return [...text.matchAll(SPECIFIER)]
    .map((m) => m[1] as string)
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => relative(ROOT, resolve(dirname(join(ROOT, file)), specifier)));
}

/** Where `text` empties tables by a list written in the test (a statement may start on the template's next line). */
export function truncateLists(text: string): string[] {
  return [...text.matchAll(TRUNCATE)].map((m) => m[0]);
}

/** Where `text` calls the clone's building block itself. */
export function rawClones(text: string): string[] {
  return [...text.matchAll(/\bcreateTestDatabase\s*\(/g)].map((m) => m[0]);
}

const read = (file: string) => readFileSync(join(ROOT, file), "utf8");
const scan = (pattern: string) => [...new Bun.Glob(pattern).scanSync(ROOT)].sort();
const testFiles = scan("tests/**/*.ts");
const toolFiles = scan("tools/**/*.ts");

function importsUnder(files: string[], folders: string[]): string[] {
  return files.flatMap((file) =>
    importsOf(file, read(file))
      .filter((target) => folders.some((folder) => target.startsWith(`${folder}/`)))
      .map((target) => `${file} imports ${target}`),
  );
}

describe("how tests are built", () => {
  test("the scans see what they must judge", () => {
    // The samples are built in pieces so that the scans of this very file do not flag them.
    const sql = "sql";
    expect(truncateLists(`await f.${sql}\`${"truncate"} entitlements, outbox_events\`;`)).toHaveLength(1);
    expect(truncateLists(`await admin.unsafe("${"truncate"} notifications");`)).toHaveLength(1);
    expect(truncateLists(`await sql\`\n      ${"truncate"} outbox_events\`;`)).toHaveLength(1);
    expect(truncateLists(`useDatabase("x", { ${"truncate"}: ["notifications"] });`)).toHaveLength(1);
    expect(truncateLists(`const statements = { ${"truncate"}: \`${"truncate"} \${own}\` };`)).toEqual([]);
    expect(truncateLists('await resetService(sql, "entitlement");')).toEqual([]);
    const clone = "createTestDatabase";
    expect(rawClones(`db = await ${clone}("x");`)).toHaveLength(1);
    expect(rawClones(`const f = useTestDatabase("x", { service: "entitlement" });`)).toEqual([]);
    const from = `${"scripts"}/build.ts`;
    expect(importsOf("tests/ship/x.ts", `import { b } from "../../${from}";`)).toEqual([from]);
    expect(testFiles).toContain("tests/support/infra.ts");
    expect(toolFiles).toContain("tools/infra/postgres.ts");
  });

  test("no test file writes its own truncate list", () => {
    // The bench's and the drills' programs run on clusters of their own, which they migrate themselves.
    const programs = /^tests\/(bench|drills)\/(?!.*\.test\.ts$)/;
    const found = testFiles
      .filter((file) => file !== "tests/support/infra.ts" && !programs.test(file))
      .flatMap((file) => truncateLists(read(file)).map((found) => `${file}: ${found.replace(/\s+/g, " ")}`));
    expect(found, "tables are emptied by resetService (or a fresh database), whose list comes from the schema").toEqual(
      [],
    );
  });

  test("no test file clones a database by hand", () => {
    // createTestDatabase is the building block of the fixtures in tests/support; a test file takes one of them, so
    // that every file opens, resets and drops its database one way. The bench's programs build their own clusters.
    const programs = /^tests\/(support|bench|drills)\/(?!.*\.test\.ts$)/;
    const found = testFiles
      .filter((file) => !programs.test(file))
      .flatMap((file) => rawClones(read(file)).map((call) => `${file}: ${call}`));
    expect(found, "take useTestDatabase, openTestDatabase or a fixture built on them (docs/testing.md)").toEqual([]);
  });

  test("nothing under tests/ imports scripts/", () => {
    expect(importsUnder(testFiles, ["scripts"]), "shared test infrastructure lives in tools/").toEqual([]);
  });

  test("tools/ imports neither tests/ nor scripts/", () => {
    expect(importsUnder(toolFiles, ["tests", "scripts"]), "tools/ sits below the tests and the commands").toEqual([]);
  });
});
