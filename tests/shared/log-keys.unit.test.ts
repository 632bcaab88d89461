// One casing for log keys across both services (docs/operations.md, "Logs"): every key a log call writes is
// snake_case, so one query (`event_id`, `notification_id`, `next_retry_at`) finds the same fact in either service's
// lines. The test reads the object literals handed to pino in src/ (log calls and child loggers); a key that a spread
// or a variable brings in is not seen here, so keep those objects snake_case as well.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const SNAKE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;
const LOG_CALL = /\blog\??\.(?:trace|debug|info|warn|error|fatal|child)\(\s*\{/g;

/** The text of the object literal that opens at `start` (a `{`), without its braces. */
function objectAt(text: string, start: number): string {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    if (text[i] === "{") depth++;
    else if (text[i] === "}" && --depth === 0) return text.slice(start + 1, i);
  }
  return text.slice(start + 1);
}

/** The top-level keys of an object literal's text (`a: 1, b, ...c` → a, b); spreads are skipped. */
export function topLevelKeys(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of body) {
    if ("{[(".includes(ch)) depth++;
    else if ("}])".includes(ch)) depth--;
    if (ch === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else current += ch;
  }
  parts.push(current);
  return parts
    .map((p) => p.trim())
    .filter((p) => p !== "" && !p.startsWith("..."))
    .map((p) => /^["']?([A-Za-z_$][\w$]*)["']?/.exec(p)?.[1] ?? p);
}

export function logKeysOf(text: string): string[] {
  return [...text.matchAll(LOG_CALL)].flatMap((m) => topLevelKeys(objectAt(text, (m.index ?? 0) + m[0].length - 1)));
}

const files = [...new Bun.Glob("src/{shared,entitlement,notification}/**/*.ts").scanSync(ROOT)].sort();

describe("log keys", () => {
  test("the reader finds the keys of log calls and child loggers", () => {
    const sample = `log.warn({ err: error, next_retry_at: at, fooBar }, "x"); deps.log.child({ component: "c", ...rest });
      log?.info({ nested: { innerKey: 1 }, "quoted_key": 2 }, "y");`;
    expect(logKeysOf(sample)).toEqual(["err", "next_retry_at", "fooBar", "component", "nested", "quoted_key"]);
  });

  test("every key a log call writes is snake_case, in both services", () => {
    const keys = files.flatMap((file) =>
      logKeysOf(readFileSync(join(ROOT, file), "utf8")).map((key) => ({ file, key })),
    );
    expect(keys.length, "the scan found the services' log calls").toBeGreaterThan(30);
    const camel = keys.filter((k) => !SNAKE.test(k.key)).map((k) => `${k.file}: ${k.key}`);
    expect(camel, "log keys are snake_case (one query works for both services)").toEqual([]);
  });
});
