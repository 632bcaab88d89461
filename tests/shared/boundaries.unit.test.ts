// The import boundaries of STYLE.md, enforced rather than remembered: src/entitlement and src/notification never import
// each other, and src/shared imports neither. The services talk only through the protobuf contract on JetStream.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;

/** Every relative import of `file` (type-only ones included), as a path from the repository root. */
export function importsOf(file: string, text: string): string[] {
  return [...text.matchAll(SPECIFIER)]
    .map((m) => m[1] as string)
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => relative(ROOT, resolve(dirname(join(ROOT, file)), specifier)));
}

const files = [...new Bun.Glob("src/**/*.ts").scanSync(ROOT)].sort();
const edges = files.flatMap((file) =>
  importsOf(file, readFileSync(join(ROOT, file), "utf8")).map((target) => ({ file, target })),
);
const under = (path: string, folder: string) => path.startsWith(`${folder}/`);

function crossing(from: string, forbidden: string[]): string[] {
  return edges
    .filter((e) => under(e.file, from) && forbidden.some((f) => under(e.target, f)))
    .map((e) => `${e.file} imports ${e.target}`);
}

describe("import boundaries", () => {
  test("the reader sees the imports it must judge", () => {
    expect(importsOf("src/a/b.ts", 'import { x } from "../shared/db.ts";\nimport type { Y } from "./y.ts";')).toEqual([
      "src/shared/db.ts",
      "src/a/y.ts",
    ]);
    expect(importsOf("src/a/b.ts", 'const m = await import("../c.ts");\nimport "./side.ts";')).toEqual([
      "src/c.ts",
      "src/a/side.ts",
    ]);
    expect(edges.some((e) => under(e.file, "src/entitlement") && under(e.target, "src/shared"))).toBe(true);
    expect(edges.some((e) => under(e.file, "src/notification") && under(e.target, "src/shared"))).toBe(true);
  });

  test("entitlement never imports notification", () => {
    expect(crossing("src/entitlement", ["src/notification"]), "the services share only the protobuf contract").toEqual(
      [],
    );
  });

  test("notification never imports entitlement", () => {
    expect(crossing("src/notification", ["src/entitlement"]), "the services share only the protobuf contract").toEqual(
      [],
    );
  });

  test("shared imports no service", () => {
    expect(
      crossing("src/shared", ["src/entitlement", "src/notification"]),
      "shared is infrastructure: a service hands it what it needs",
    ).toEqual([]);
  });
});
