// src/gen is generated from proto/ and committed: this fails when `bun run gen` would change it, so a
// proto edit without regenerated code (or a hand edit of generated code) cannot pass CI.
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

// Real PostgreSQL and NATS on a loaded 2-core CI machine: waits are polled, but the whole test may take a while.
setDefaultTimeout(90_000);

const root = resolve(import.meta.dir, "../..");
const work = mkdtempSync(join(tmpdir(), "buf-gen-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The project's own template, with only the output folder moved to a temp directory. */
function templateInto(out: string): string {
  const template = readFileSync(join(root, "buf.gen.yaml"), "utf8");
  const moved = template.replace(/^(\s*out:\s*)src\/gen\s*$/m, `$1${out}`);
  if (moved === template) throw new Error("buf.gen.yaml no longer has `out: src/gen`; update this test");
  const path = join(work, "buf.gen.yaml");
  writeFileSync(path, moved);
  return path;
}

const listFiles = (dir: string) => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());

test("src/gen is exactly what `buf generate` makes from proto/", () => {
  const out = join(work, "gen");
  const bin = join(root, "node_modules/.bin");
  const run = Bun.spawnSync([join(bin, "buf"), "generate", "--template", templateInto(out)], {
    cwd: root,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}` },
  });
  expect(run.stderr.toString(), "buf generate must succeed").toBe("");
  expect(run.exitCode).toBe(0);

  const relative = (dir: string) =>
    listFiles(dir)
      .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
      .sort();
  const committed = join(root, "src/gen");
  const files = relative(out);
  expect(relative(committed), "src/gen holds exactly the generated files").toEqual(files);
  for (const file of files) {
    const fresh = readFileSync(join(out, file));
    const current = readFileSync(join(committed, file));
    expect(Buffer.compare(fresh, current), `${file} matches a fresh generation byte for byte (run bun run gen)`).toBe(
      0,
    );
  }
});
