// docs/api.md and docs/events.md are written by hand for people; these checks keep them in step with the code: every
// operation of the OpenAPI documents, every error code and every field of every event message is described.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { DescFile } from "@bufbuild/protobuf";
import { ERROR_CODES } from "../../src/shared/http/errors.ts";
import { OPENAPI_DOCS } from "../../tools/docs-openapi.ts";

const docs = resolve(import.meta.dir, "../../docs");
const apiGuide = readFileSync(resolve(docs, "api.md"), "utf8");
const eventsGuide = readFileSync(resolve(docs, "events.md"), "utf8");

const operations = (path: string) =>
  Object.entries(JSON.parse(readFileSync(path, "utf8")).paths as Record<string, Record<string, unknown>>).flatMap(
    ([route, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${route}`),
  );

test("docs/api.md describes every operation of both OpenAPI documents", () => {
  const all = [...operations(OPENAPI_DOCS.entitlement), ...operations(OPENAPI_DOCS.notification)];
  expect(all.length).toBeGreaterThan(5);
  expect(all.filter((op) => !apiGuide.includes(`\`${op}\``))).toEqual([]);
});

/** Every `code` an error response of the OpenAPI document may carry (its const, enum or alternatives). */
function documentedCodes(path: string): string[] {
  const codes = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(walk);
      return;
    }
    if (typeof node !== "object" || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      const code = value as { const?: string; enum?: string[]; anyOf?: { const?: string }[] };
      if (key === "code" && typeof value === "object" && value !== null) {
        for (const c of [code.const, ...(code.enum ?? []), ...(code.anyOf ?? []).map((a) => a.const)]) {
          if (c) codes.add(c);
        }
      }
      walk(value);
    }
  };
  walk(JSON.parse(readFileSync(path, "utf8")));
  return [...codes];
}

test("docs/api.md lists every error code in its table", () => {
  const documented = [...documentedCodes(OPENAPI_DOCS.entitlement), ...documentedCodes(OPENAPI_DOCS.notification)];
  expect(documented, "the domain codes of the 409s are read from the documents").toContain("POINTS_BALANCE_LIMIT");
  expect(
    [...ERROR_CODES, ...documented].filter((code) => !new RegExp(`^\\| \\d{3} +\\| \`${code}\` `, "m").test(apiGuide)),
  ).toEqual([]);
});

/** Every top-level message of every file generated from proto/ (each module exports its `file_<name>`). */
async function eventMessages() {
  const gen = resolve(import.meta.dir, "../../src/gen");
  const files = readdirSync(gen).filter((f) => f.endsWith("_pb.ts"));
  const modules = await Promise.all(files.map((f) => import(resolve(gen, f))));
  return modules.flatMap((mod, i) => (mod[`file_${files[i]?.replace(/_pb\.ts$/, "")}`] as DescFile).messages);
}

test("docs/events.md lists every field of every event message with its number", async () => {
  const messages = await eventMessages();
  expect(messages.map((m) => m.name)).toContain("EntitlementEvent");
  for (const message of messages) {
    expect(eventsGuide, `a section for ${message.name}`).toContain(`## ${message.name}`);
    const missing = message.fields.filter(
      (f) => !new RegExp(`^\\| \`${f.name}\` +\\| ${f.number} +\\|`, "m").test(eventsGuide),
    );
    expect(missing.map((f) => `${message.name}.${f.name} = ${f.number}`)).toEqual([]);
  }
});
