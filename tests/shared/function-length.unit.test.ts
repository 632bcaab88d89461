// Every function of src/, and of the tests' own programs, fits on a screen: at most 60 lines, from its first line to
// its last (declarations, arrow functions, function expressions and methods alike; a function inside another counts on
// its own, and in its parent's lines). A longer one is several steps that want names of their own.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dir, "../..");
const MAX_LINES = 60;

/** The functions of `text` longer than `max` lines, as `name (lines)`. */
export function longFunctions(file: string, text: string, max: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node) ||
      ts.isMethodDeclaration(node)
    ) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (last - first + 1 > max) found.push(`${nameOf(node)} (${last - first + 1} lines, line ${first + 1})`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  return "(anonymous)";
}

test("the check measures every kind of function, nested ones on their own", () => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  const a${i} = ${i};`).join("\n");
  const text = [
    `function short() {\n${body(3)}\n}`,
    `const arrow = () => {\n${body(4)}\n};`,
    `const o = { method() {\n${body(4)}\n} };`,
    `function outer() {\n  const inner = function () {\n${body(5)}\n  };\n}`,
  ].join("\n");
  expect(longFunctions("sample.ts", text, 5)).toEqual([
    "arrow (6 lines, line 6)",
    "method (6 lines, line 12)",
    "outer (9 lines, line 18)",
    "inner (7 lines, line 19)",
  ]);
});

/** The functions over MAX_LINES in the files `pattern` finds, as `file: name (lines)`. */
function longFunctionsIn(pattern: string, keep: (file: string) => boolean): string[] {
  const files = [...new Bun.Glob(pattern).scanSync(ROOT)].filter(keep).sort();
  return files.flatMap((file) =>
    longFunctions(file, readFileSync(join(ROOT, file), "utf8"), MAX_LINES).map((f) => `${file}: ${f}`),
  );
}

test(`no function in src/ is longer than ${MAX_LINES} lines`, () => {
  const long = longFunctionsIn("src/**/*.ts", (file) => !file.startsWith("src/gen/"));
  expect(long, "split it into steps with names of their own").toEqual([]);
});

test(`no function of the tests' own programs (bench, drills, support) is longer than ${MAX_LINES} lines`, () => {
  // The benchmark, the drills and the shared fixtures are programs that others read and extend. The test files
  // themselves are exempt: a describe or test callback is a list of cases, not a step of a program.
  const long = longFunctionsIn("tests/{bench,drills,support}/**/*.ts", (file) => !file.endsWith(".test.ts"));
  expect(long, "split it into steps with names of their own").toEqual([]);
});
