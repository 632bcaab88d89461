// The repository explains itself: no tracked file cites a document, an issue or a design note that a clone does not
// contain. Behaviour is described in docs/ in the repository's own words; the original Java implementation is named
// once, in docs/decisions.md, and called "the Java original" everywhere else.
import { describe, expect, test } from "bun:test";

// Built from pieces so that this file does not match its own patterns.
const word = (...parts: string[]): string => parts.join("");
const FORBIDDEN: { pattern: RegExp; why: string }[] = [
  { pattern: new RegExp(`\\b${word("CON", "TRACT")}\\b`), why: "cites a contract document that is not here" },
  { pattern: new RegExp(`\\b${word("STY", "LE")}(\\s*§|\\.md)`), why: "cites a style guide that is not here" },
  {
    pattern: new RegExp(`\\b${word("refer", "ence")}\\s+(tests?\\s+\\d|§|item|catalogue)`, "i"),
    why: "cites a test or section of a document that is not here",
  },
  {
    pattern: new RegExp(`\\bthe\\s+${word("refer", "ence")}('s)?\\b`, "i"),
    why: "calls the Java original by a name the repository does not define",
  },
  { pattern: new RegExp(`\\b${word("iss", "ue")}s?[\\s-]+#?\\d+`, "i"), why: "cites an issue number" },
  { pattern: new RegExp(`\\b${word("se", "ed")}s?\\s+\`?00\\d\`?`, "i"), why: "cites a design note that is not here" },
  {
    pattern: new RegExp(`\\.\\./${word("sha", "red")}/(spec|reference|seeds|bench|STYLE)`),
    why: "points outside the repository",
  },
];

async function trackedTextFiles(): Promise<string[]> {
  const out = await Bun.$`git ls-files -z`.quiet().text();
  return out
    .split("\0")
    .filter((f) => f && !/\.(png|jpe?g|gif|ico|lock|lockb|bin|pb|binpb)$/.test(f) && f !== "bun.lock");
}

describe("the repository stands alone", () => {
  test("no tracked file cites something outside the repository", async () => {
    const offences: string[] = [];
    for (const file of await trackedTextFiles()) {
      const text = await Bun.file(file).text();
      text.split("\n").forEach((line, i) => {
        for (const { pattern, why } of FORBIDDEN) {
          if (pattern.test(line)) offences.push(`${file}:${i + 1}: ${why}: ${line.trim().slice(0, 120)}`);
        }
      });
    }
    expect(offences, "every citation is replaced by the repository's own words").toEqual([]);
  });

  test("the patterns catch what they are meant to catch", () => {
    const samples = [
      `see ${word("CON", "TRACT")} §3`,
      `${word("STY", "LE")} §4`,
      `(${word("refer", "ence")} test 75)`,
      `as in the ${word("refer", "ence")}`,
      `${word("iss", "ue")} 18`,
      `the ${word("iss", "ue")}-6 sizes`,
      `${word("se", "ed")} 003`,
      `../${word("sha", "red")}/spec`,
    ];
    for (const s of samples)
      expect(
        FORBIDDEN.some(({ pattern }) => pattern.test(s)),
        s,
      ).toBe(true);
    expect(
      FORBIDDEN.some(({ pattern }) => pattern.test("the Java original's default")),
      "the name itself",
    ).toBe(false);
  });
});
