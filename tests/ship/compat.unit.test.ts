// Compatibility with the last release (compat/, docs/releasing.md): proto/ through `buf breaking`, the OpenAPI
// documents through a classifying diff. Also checks that both checks catch the breaks they exist for.
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  BASELINE_DOCS,
  breakingChanges,
  protoBreaking,
  RECORD_HINT,
  staleAcceptances,
  unacceptedChanges,
} from "../../tools/compat.ts";

/** The parts of the Entitlement OpenAPI document these tests edit. */
type Schema = { properties: Record<string, unknown> & { reason: { maxLength: number } }; required: string[] };
type Content = { "application/json": { schema: Schema } };
type Operation = {
  operationId?: string;
  parameters: unknown[];
  requestBody: { content: Content };
  responses: { "200": { content: Content } };
};
type Doc = {
  paths: {
    "/v1/entitlements/grants": { post: Operation };
    "/v1/entitlements/revokes"?: { post: Operation };
    "/v1/entitlements/extensions"?: { post: Operation };
    "/v1/users/{user_id}/entitlements": { get: Operation };
  };
};

const root = resolve(import.meta.dir, "../..");
const work = mkdtempSync(join(tmpdir(), "compat-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("against the last release", () => {
  test("proto/ has no breaking change (buf breaking)", () => {
    const result = protoBreaking();
    expect(result.ok, `buf breaking against compat/proto-image.json:\n${result.output}`).toBe(true);
  });

  for (const service of ["entitlement", "notification"] as const) {
    test(`the ${service} OpenAPI document has no unrecorded breaking change`, () => {
      const changes = unacceptedChanges(service).map((c) => `${c.id}: ${c.description}`);
      expect(changes, RECORD_HINT).toEqual([]);
    });
  }

  test("every recorded breaking change still exists (the list is emptied at each release)", () => {
    expect(staleAcceptances()).toEqual([]);
  });
});

describe("the checks catch breaks", () => {
  test("a renumbered field fails buf breaking", () => {
    const workspace = join(work, "renumbered");
    cpSync(join(root, "proto"), join(workspace, "proto"), { recursive: true });
    cpSync(join(root, "buf.yaml"), join(workspace, "buf.yaml"));
    const file = join(workspace, "proto/entitlement_event.proto");
    const text = readFileSync(file, "utf8");
    const renumbered = text.replace(/string user_id = 4;/, "string user_id = 40;");
    expect(renumbered, "the fixture edits EntitlementEvent.user_id = 4").not.toBe(text);
    writeFileSync(file, renumbered);
    const result = protoBreaking(workspace);
    expect(result.ok).toBe(false);
    expect(result.output).toContain('field "4" with name "user_id"');
  });

  const baseline = (): Doc => JSON.parse(readFileSync(BASELINE_DOCS.entitlement, "utf8"));
  const grantBody = (doc: Doc) =>
    doc.paths["/v1/entitlements/grants"].post.requestBody.content["application/json"].schema;
  const listOp = (doc: Doc) => doc.paths["/v1/users/{user_id}/entitlements"].get;

  test("a removed path, a new required body field and a narrowed limit are breaking", () => {
    const removed = baseline();
    delete removed.paths["/v1/entitlements/revokes"];
    expect(breakingChanges(baseline(), removed).map((c) => c.id)).toEqual([
      "remove #/paths/~1v1~1entitlements~1revokes/post",
    ]);

    const required = baseline();
    grantBody(required).properties.expires_at = { type: "string", format: "date-time" };
    grantBody(required).required.push("expires_at");
    expect(breakingChanges(baseline(), required).length).toBeGreaterThan(0);

    const narrowed = baseline();
    grantBody(narrowed).properties.reason.maxLength = 32;
    expect(breakingChanges(baseline(), narrowed).map((c) => c.id)).toEqual([
      "replace #/paths/~1v1~1entitlements~1grants/post/requestBody/content/application~1json/schema/properties/reason/maxLength",
    ]);
  });

  test("additions are not: a new path, an optional query parameter, a new response field", () => {
    const added = baseline();
    const extend = structuredClone(added.paths["/v1/entitlements/grants"]);
    extend.post.operationId = "extendEntitlement";
    added.paths["/v1/entitlements/extensions"] = extend;
    listOp(added).parameters.push({ name: "limit", in: "query", required: false, schema: { type: "integer" } });
    const ok = listOp(added).responses["200"].content["application/json"].schema;
    ok.properties.next_cursor = { anyOf: [{ type: "string" }, { type: "null" }] };
    ok.required.push("next_cursor");
    expect(breakingChanges(baseline(), added)).toEqual([]);
  });
});
