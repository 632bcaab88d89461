// docs/openapi.json and docs/openapi-notification.json are generated from the route schemas (what each service serves
// at /openapi.json): this fails when a route, schema or description changed without regenerating them.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import {
  type DocumentedService,
  documentedApp,
  OPENAPI_DOCS,
  renderOpenApiDoc,
  STALE_HINT,
} from "../../tools/docs-openapi.ts";

for (const service of Object.keys(OPENAPI_DOCS) as DocumentedService[]) {
  test(`the committed ${service} OpenAPI document is what the service serves`, async () => {
    expect(readFileSync(OPENAPI_DOCS[service], "utf8"), `${OPENAPI_DOCS[service]} is stale: ${STALE_HINT}`).toBe(
      await renderOpenApiDoc(service),
    );
  });
}

test("the Entitlement document names the bearer scheme and leaves only the probes open", () => {
  const doc = JSON.parse(readFileSync(OPENAPI_DOCS.entitlement, "utf8"));
  expect(doc.security).toEqual([{ bearer: [] }]);
  const open = Object.entries(doc.paths as Record<string, Record<string, { security?: unknown[] }>>)
    .filter(([, ops]) => Object.values(ops).some((op) => op.security?.length === 0))
    .map(([path]) => path);
  expect(open, "only the probes need no token").toEqual([
    "/healthz",
    "/readyz",
    "/actuator/health/liveness",
    "/actuator/health/readiness",
  ]);
});

test("the document stays the same once the routes have served requests", async () => {
  // Elysia writes into a route's schemas when it first compiles them; the document must not show it.
  const before = await renderOpenApiDoc("entitlement");
  const app = documentedApp("entitlement");
  const grant = JSON.stringify({ user_id: "u", stock_keeping_unit: "s", reason: "r", purchase_id: "p" });
  const headers = { "content-type": "application/json", "idempotency-key": "k" };
  await app.handle(new Request("http://localhost/healthz"));
  await app.handle(new Request("http://localhost/v1/users/u/entitlements"));
  await app.handle(new Request("http://localhost/v1/entitlements/grants", { method: "POST", headers, body: grant }));
  const served = await (await app.handle(new Request("http://localhost/openapi.json"))).json();
  expect(JSON.stringify(served).includes('"additionalProperties":false'), "served after requests").toBe(false);
  expect(await renderOpenApiDoc("entitlement")).toBe(before);
});
