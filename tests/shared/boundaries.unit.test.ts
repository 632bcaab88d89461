// The import boundaries, enforced rather than remembered: src/entitlement and src/notification never import each
// other, and src/shared imports neither (the services talk only through the protobuf contract on JetStream); no
// source file reaches itself through its imports, nor a folder or a root file of a service through another's; the
// rooms of Entitlement import only the rooms below them; and only Entitlement's write/ calls the SQL functions that
// write.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
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

  test("no two folders or root files of a service import each other, directly or in a circle", () => {
    expect(roomCircles(edges), "folders in a circle are one room, or share a third below both").toEqual([]);
  });

  test("the circle check sees a circle through a service's root file", () => {
    const sample = [
      { file: "src/s/a/worker.ts", target: "src/s/config.ts" },
      { file: "src/s/config.ts", target: "src/s/b/settings.ts" },
      { file: "src/s/b/settings.ts", target: "src/s/a/parse.ts" },
    ];
    expect(roomCircles(sample)).toEqual(["src/s/a", "src/s/b", "src/s/config.ts"]);
  });
});

/**
 * The folders and root files of a service that reach themselves through their imports. A root file (config.ts,
 * metrics.ts) is a node of its own, so a circle through it is seen too.
 */
export function roomCircles(graph: { file: string; target: string }[]): string[] {
  const nodeOf = (file: string) => /^(src\/\w+\/[^/]+)/.exec(file)?.[1];
  const next = new Map<string, Set<string>>();
  for (const e of graph) {
    const [from, to] = [nodeOf(e.file), nodeOf(e.target)];
    if (from && to && from !== to && !under(e.file, "src/shared")) {
      next.set(from, (next.get(from) ?? new Set()).add(to));
    }
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
  return [...next.keys()].filter((node) => reaches(node, node)).sort();
}

// Each service's rooms, top to bottom, and the rooms each may import. In Entitlement a request enters through a
// feature's route (features/, built on the HTTP kit in edge/), which writes only through write/; the background work
// (work/) and the operators' tools (ops/, console/) stand on the same rooms. Notification uses the same words: events
// come in and are stored through intake/ (the JetStream consumers, the handlers, the advisories: its bottom room, as
// write/ is Entitlement's); features/ serves the HTTP API (the endpoints admin API, the players' inbox and stream,
// the debug inbox) on the auth schemes of edge/; work/ delivers what intake stored (the channel, the endpoints) and
// keeps retention; console/ and ops/ are the operators'. app.ts, workers.ts and main.ts
// at the root wire the rooms together and nothing but main.ts imports them. Rooms may read the root's settings
// (config.ts, migrations.ts, metrics.ts), which gather what the rooms declare; a circle through them is caught by the
// circle check.
const SERVICES: Record<string, { rooms: Record<string, string[]>; settings: string[] }> = {
  "src/entitlement": {
    rooms: {
      console: ["ops", "features", "edge", "write"],
      ops: ["work", "features", "write"],
      work: ["features", "write"],
      features: ["edge", "write"],
      edge: ["write"],
      write: [],
    },
    settings: ["config.ts", "migrations.ts"],
  },
  "src/notification": {
    rooms: {
      console: ["ops", "features", "edge", "work", "intake"],
      ops: ["work", "features", "intake"],
      work: ["features", "intake"],
      features: ["edge", "intake"],
      edge: [],
      intake: [],
    },
    settings: ["config.ts", "migrations.ts", "metrics.ts"],
  },
};
const SERVICE = "src/entitlement";
const COMPOSITION = ["main.ts", "app.ts", "workers.ts"];

/** The room (folder) or root file of a path of `service`, or undefined outside it. */
const entryOf = (service: string, file: string) =>
  under(file, service) ? file.slice(service.length + 1).split("/")[0] : undefined;

for (const [service, { rooms, settings }] of Object.entries(SERVICES)) {
  describe(`${service}'s rooms`, () => {
    test("the top level is the composition, the settings and the rooms, at most twelve entries", () => {
      const top = readdirSync(join(ROOT, service)).sort();
      expect(top).toEqual([...COMPOSITION, ...settings, ...Object.keys(rooms)].sort());
      expect(top.length).toBeLessThanOrEqual(12);
    });

    test.if(service === "src/notification")(
      "no folder holds more than fifteen files: a larger one is split by role",
      () => {
        const folders = new Map<string, number>();
        for (const file of files.filter((f) => under(f, service))) {
          folders.set(dirname(file), (folders.get(dirname(file)) ?? 0) + 1);
        }
        expect(folders.size).toBeGreaterThan(1);
        expect([...folders].filter(([, count]) => count > 15).map(([folder, count]) => `${folder}: ${count}`)).toEqual(
          [],
        );
      },
    );

    test("a room imports only the rooms below it, the root's settings and itself; only main.ts imports the composition", () => {
      const wrong = edges.flatMap((e) => {
        const [from, to] = [entryOf(service, e.file), entryOf(service, e.target)];
        if (!from || !to || from === to) return [];
        if (COMPOSITION.includes(to)) return from === "main.ts" ? [] : [`${e.file} imports ${e.target}`];
        if (COMPOSITION.includes(from) || settings.includes(from)) return [];
        const allowed = [...(rooms[from] ?? []), ...settings];
        return allowed.includes(to) ? [] : [`${e.file} imports ${e.target}`];
      });
      expect(wrong, "a lower room never imports a higher one; move the shared piece down").toEqual([]);
    });
  });
}

describe("Entitlement's write path", () => {
  test("write/ is the bottom layer: it imports only itself and shared/, never a room or setting above it", () => {
    const upward = edges
      .filter((e) => under(e.file, `${SERVICE}/write`) && !under(e.target, `${SERVICE}/write`))
      .filter((e) => !under(e.target, "src/shared"))
      .map((e) => `${e.file} imports ${e.target}`);
    expect(upward, "the runner above (features/commands/) calls write/, which never calls back").toEqual([]);
  });

  test("only write/ calls the SQL functions that write", () => {
    const writers = writeFunctions(sqlFiles(`db/entitlement`));
    const calls = files
      .filter((file) => under(file, SERVICE))
      .flatMap((file) => writeCalls(readFileSync(join(ROOT, file), "utf8"), writers).map((f) => `${file} calls ${f}`));
    expect(
      calls.filter((c) => !under(c, `${SERVICE}/write`)),
      "call the write/ file that makes the call",
    ).toEqual([]);
    expect(calls.length, "the write path calls them from write/").toBeGreaterThan(0);
  });

  test("the write-function check knows what writes and sees a call", () => {
    const writers = writeFunctions([
      "create or replace function w(p int) returns void language sql as $$ insert into t values (p) $$;",
      "create function v(p int) returns void language plpgsql as $body$ begin perform w(p); end $body$;",
      "create function r(p int) returns int language sql stable as $$ select p $$;",
      "create function u(p int) returns void language sql as $$ update t x set a = p $$;",
    ]);
    expect([...writers].sort()).toEqual(["u", "v", "w"]);
    expect(
      writeCalls("// one call of w(x)\nawait db`select * from v($1, $2)`; await db`select r(1)`", writers),
    ).toEqual(["v"]);
    const real = writeFunctions(sqlFiles("db/entitlement"));
    expect(real.has("entitlement_status_change") && real.has("point_execute")).toBe(true);
  });
});

/** The text of every SQL file under `folder`, numbered migrations first: a later definition replaces an earlier. */
function sqlFiles(folder: string): string[] {
  return [...new Bun.Glob(`${folder}/**/*.sql`).scanSync(ROOT)].sort().map((f) => readFileSync(join(ROOT, f), "utf8"));
}

const DEFINITION = /create\s+(?:or\s+replace\s+)?function\s+(?:\w+\.)?(\w+)\s*\([\s\S]*?\bas\s+(\$\w*\$)([\s\S]*?)\2/gi;
const WRITES = /\b(?:insert\s+into|delete\s+from|update\s+\w+(?:\s+(?:as\s+)?\w+)?\s+set)\b/i;

/** The SQL functions that write a row, themselves or through another function that does. */
export function writeFunctions(sqlTexts: string[]): Set<string> {
  const bodies = new Map<string, string>();
  // String literals are left out: the partition maintenance's dynamic statements move rows, they record nothing.
  // Comments go first: an apostrophe in one ("the bundle's") would otherwise open a literal that hides the code after.
  const code = (body: string) => body.replace(/--.*$/gm, "").replace(/'[^']*'/g, "''");
  for (const text of sqlTexts) {
    for (const m of text.matchAll(DEFINITION)) bodies.set(m[1] as string, code(m[3] as string));
  }
  const writers = new Set([...bodies].filter(([, body]) => WRITES.test(body)).map(([name]) => name));
  for (let grew = true; grew; ) {
    grew = false;
    for (const [name, body] of bodies) {
      if (!writers.has(name) && writeCalls(body, writers).length > 0) grew = writers.add(name).size > 0;
    }
  }
  return writers;
}

/** The write functions a source text calls (a name followed by its parenthesis), comments left out. */
export function writeCalls(text: string, writers: Set<string>): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$|--.*$/gm, "");
  return [...writers].filter((name) => new RegExp(`\\b${name}\\s*\\(`).test(code)).sort();
}
