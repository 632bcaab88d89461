// docs/architecture.md's Layout section is the map of src/ that new code is placed by, so it must match the tree:
// every .ts file of src/ is named on its folder's line, and every file named there exists.
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const FILE_NAME = /[\w.-]+\.ts\b/g;

/** Folder → the text of its entry, from the Layout section's code block (`src/x/` lines and their `  sub/` lines). */
export function layoutEntries(markdown: string): Map<string, string> {
  const section = markdown.slice(markdown.indexOf("## Layout"));
  const block = section.slice(section.indexOf("```\n") + 4, section.indexOf("\n```", section.indexOf("```\n") + 4));
  const entries = new Map<string, string>();
  let top = "";
  let current = "";
  for (const line of block.split("\n")) {
    const folder = /^( {0,2})(\S+\/)(?:\s|$)/.exec(line);
    if (folder) {
      const name = folder[2] as string;
      current = folder[1] === "" ? name : `${top}${name}`;
      if (folder[1] === "") top = name;
      entries.set(current, line.slice(folder[0].length).trim());
    } else if (current) {
      entries.set(current, `${entries.get(current)} ${line.trim()}`);
    }
  }
  return entries;
}

const entries = layoutEntries(readFileSync(join(ROOT, "docs/architecture.md"), "utf8"));
const files = [...new Bun.Glob("src/**/*.ts").scanSync(ROOT)].sort();

test("the reader splits the layout into folder entries", () => {
  const sample = "## Layout\n\n```\nsrc/a/   x.ts, y.ts (what)\n         z.ts\n  b/     w.ts\nsrc/c/   v.ts\n```\n";
  expect([...layoutEntries(sample).entries()]).toEqual([
    ["src/a/", "x.ts, y.ts (what) z.ts"],
    ["src/a/b/", "w.ts"],
    ["src/c/", "v.ts"],
  ]);
  expect(entries.get("src/shared/http/"), "the real section has nested entries").toContain("app.ts");
});

test("every file of src/ is named on its folder's line in docs/architecture.md", () => {
  const missing = files.filter((file) => {
    const names: string[] = entries.get(`${dirname(file)}/`)?.match(FILE_NAME) ?? [];
    return !names.includes(file.slice(dirname(file).length + 1));
  });
  expect(missing, "add the file to the Layout section of docs/architecture.md").toEqual([]);
});

test("every file the layout names exists", () => {
  const stale = [...entries].flatMap(([folder, text]) =>
    folder.startsWith("src/")
      ? (text.match(FILE_NAME) ?? []).filter((name) => !existsSync(join(ROOT, folder, name))).map((n) => folder + n)
      : [],
  );
  expect(stale, "the Layout section names files that are gone").toEqual([]);
});
