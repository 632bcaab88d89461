// What makes docs/openapi*.json generate good clients (src/shared/http/openapi-refine.ts): named schemas, typed query
// values, the conditional GET, Retry-After, 405 and 431, per-route error codes as enums with an example, the headers
// every request and response may carry, and the enum of notification types.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { NOTIFICATION_TYPES } from "../../src/notification/intake/consumer/handler.ts";
import { OPENAPI_DOCS } from "../../tools/docs-openapi.ts";

// biome-ignore lint/suspicious/noExplicitAny: a parsed JSON document, read by path.
type Json = Record<string, any>;
const load = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Json;
const entitlement = load(OPENAPI_DOCS.entitlement);
const notification = load(OPENAPI_DOCS.notification);

const operations = (doc: Json) =>
  Object.entries(doc.paths as Json).flatMap(([path, ops]) =>
    Object.entries(ops as Json).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op: op as Json })),
  );
const schemaOf = (doc: Json, response: Json) => {
  const ref = response.content?.["application/json"]?.schema?.$ref as string | undefined;
  return ref ? doc.components.schemas[ref.replace("#/components/schemas/", "")] : undefined;
};

test("every JSON body is a named component schema", () => {
  for (const doc of [entitlement, notification]) {
    expect(Object.keys(doc.components.schemas).length).toBeGreaterThan(5);
    for (const { name, op } of operations(doc)) {
      for (const [status, response] of Object.entries(op.responses as Json)) {
        const schema = (response as Json).content?.["application/json"]?.schema;
        if (schema) expect(schema.$ref, `${name} ${status}`).toStartWith("#/components/schemas/");
      }
      const body = op.requestBody?.content?.["application/json"]?.schema;
      if (body) expect(body.$ref, `${name} body`).toStartWith("#/components/schemas/");
    }
  }
  expect(entitlement.components.schemas).toContainKeys(["Entitlement", "EntitlementGrant", "PointReservation"]);
});

test("limit is an integer from 1 to 1000 on every paged route", () => {
  const limits = operations(entitlement).flatMap(({ op }) =>
    ((op.parameters ?? []) as Json[]).filter((p) => p.name === "limit"),
  );
  expect(limits.length).toBe(3);
  for (const limit of limits) expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 1000 });
});

test("the check route declares If-None-Match, the ETag and 304", () => {
  const check = entitlement.paths["/v1/users/{user_id}/entitlements/{stock_keeping_unit}"].get;
  expect(check.parameters.map((p: Json) => `${p.in} ${p.name}`)).toContain("header If-None-Match");
  expect(Object.keys(check.responses["200"].headers)).toEqual(["ETag", "X-Request-Id"]);
  expect(check.responses["304"].headers.ETag).toBeDefined();
});

test("429 and 503 carry Retry-After; every route may answer 405 with Allow, and Entitlement's 431", () => {
  for (const doc of [entitlement, notification]) {
    for (const { name, op } of operations(doc)) {
      for (const status of ["429", "503"]) {
        if (op.responses[status])
          expect(op.responses[status].headers?.["Retry-After"], `${name} ${status}`).toBeDefined();
      }
      expect(op.responses["405"]?.headers?.Allow, `${name} 405`).toBeDefined();
      if (doc === entitlement) expect(op.responses["431"], `${name} 431`).toBeDefined();
    }
  }
});

test("each error response lists its codes as an enum, with an example of one of them", () => {
  for (const doc of [entitlement, notification]) {
    for (const { name, op } of operations(doc)) {
      for (const [status, response] of Object.entries(op.responses as Json)) {
        if (Number(status) < 400) continue;
        const schema = schemaOf(doc, response as Json);
        if (!schema) continue; // /metrics' 401 and 403 are JSON too; any other body would fail the first test
        const codes = schema.properties.code.enum as string[];
        expect(codes.length, `${name} ${status}`).toBeGreaterThan(0);
        expect(codes).toContain(schema.examples[0].code);
      }
    }
  }
  const grant = entitlement.paths["/v1/entitlements/grants"].post.responses;
  expect(schemaOf(entitlement, grant["409"]).properties.code.enum).toEqual([
    "IDEMPOTENCY_KEY_CONFLICT",
    "ENTITLEMENT_STATE_CONFLICT",
  ]);
  expect(schemaOf(entitlement, grant["404"]).properties.code.enum).toEqual(["NOT_FOUND"]);
});

test("every operation takes traceparent and X-Request-Id; every response names its X-Request-Id, every 401 and 403 its challenge", () => {
  for (const doc of [entitlement, notification]) {
    for (const { name, op } of operations(doc)) {
      const headers = ((op.parameters ?? []) as Json[]).filter((p) => p.in === "header").map((p) => p.name);
      expect(headers, name).toEqual(expect.arrayContaining(["traceparent", "x-request-id"]));
      for (const [status, response] of Object.entries(op.responses as Json)) {
        expect((response as Json).headers?.["X-Request-Id"], `${name} ${status}`).toBeDefined();
        if (status === "401" || status === "403") {
          expect((response as Json).headers?.["WWW-Authenticate"], `${name} ${status}`).toBeDefined();
        }
      }
    }
  }
  const grant = entitlement.paths["/v1/entitlements/grants"].post.responses;
  expect(Object.keys(grant["401"].headers)).toContain("WWW-Authenticate");
  expect(Object.keys(grant["403"].headers)).toContain("WWW-Authenticate");
});

test("a notification's type is the enum of the types the service produces", () => {
  const type = notification.components.schemas.NotificationSummary.properties.type;
  expect(type.enum).toEqual([...NOTIFICATION_TYPES]);
  expect(type.enum).toContain(type.example);
});
