// What the generated /openapi.json needs beyond Elysia's rendering of the route schemas, so that a generated client is
// a good one: query values typed as what they mean (`limit` an integer, though read as text), the responses every
// route may give (405, and 431 where headers are limited), `Retry-After` on 429 and 503, what a route declares outside
// its schemas (the conditional GET's headers and 304), and every titled schema as a named component that responses
// refer to, so that clients get one named type per schema instead of an anonymous copy per use.
import type { TObject } from "@sinclair/typebox";

/** A schema option: read the value as the route's schema says, document it as this schema. */
export const DOCUMENTED_AS = "x-documented-as";

type Json = Record<string, unknown>;

export type OperationExtra = { parameters?: Json[]; responses?: Record<string, Json> };

export type Refinements = {
  /** Error responses of every operation, by status (405 everywhere; 431 where headers are limited). */
  everyOperation?: Record<number, TObject>;
  /** Added to the operation of that operationId: parameters appended, responses merged (headers included). */
  operations?: Record<string, OperationExtra>;
};

const RETRY_AFTER = {
  "Retry-After": {
    description: "Seconds to wait before retrying.",
    schema: { type: "integer", minimum: 1 },
    example: 1,
  },
};

const ALLOW = { Allow: { description: "The methods the path has.", schema: { type: "string" }, example: "POST" } };

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function mapDeep(value: unknown, f: (node: Json) => Json): unknown {
  if (Array.isArray(value)) return value.map((v) => mapDeep(v, f));
  if (!isObject(value)) return value;
  return f(Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapDeep(v, f)])));
}

/**
 * A schema carrying DOCUMENTED_AS becomes that schema, keeping its description; a one-value string (a TypeBox
 * literal: an error code, a status) is written as an enum of one, as the error codes of several values are.
 */
function documentedAs(node: Json): Json {
  if (typeof node.const === "string" && node.type === "string") {
    const { const: value, ...rest } = node;
    return { ...rest, enum: [value] };
  }
  const as = node[DOCUMENTED_AS];
  if (!isObject(as)) return node;
  return { ...as, ...(node.description === undefined ? {} : { description: node.description }) };
}

function errorResponse(schema: TObject): Json {
  return { description: schema.description, content: { "application/json": { schema: structuredClone(schema) } } };
}

function refineOperation(operation: Json, refinements: Refinements): Json {
  const responses = { ...(operation.responses as Record<string, Json>) };
  for (const [status, schema] of Object.entries(refinements.everyOperation ?? {})) {
    responses[status] ??= errorResponse(schema);
  }
  const extra = refinements.operations?.[String(operation.operationId)];
  for (const [status, response] of Object.entries(extra?.responses ?? {})) {
    const current = responses[status] ?? {};
    const headers = { ...(current.headers as Json | undefined), ...(response.headers as Json | undefined) };
    responses[status] = { ...current, ...response, ...(Object.keys(headers).length > 0 ? { headers } : {}) };
  }
  for (const [status, response] of Object.entries(responses)) {
    // Elysia writes a `null` response (a 204) as the schema itself where its media types belong: no body, no content.
    if ((response.content as Json | undefined)?.type === "null")
      responses[status] = { description: response.description };
  }
  if (responses["405"]) responses["405"] = { ...responses["405"], headers: ALLOW };
  for (const status of ["429", "503"]) {
    const response = responses[status];
    if (response) responses[status] = { ...response, headers: { ...(response.headers as Json), ...RETRY_AFTER } };
  }
  const parameters = [...((operation.parameters as Json[] | undefined) ?? []), ...(extra?.parameters ?? [])];
  return { ...operation, ...(parameters.length > 0 ? { parameters } : {}), responses };
}

/** JSON with the keys of every object sorted: equal for equal schemas whatever order their keys came in. */
const canonical = (value: unknown): string =>
  JSON.stringify(
    mapDeep(value, (node) => Object.fromEntries(Object.entries(node).sort(([a], [b]) => a.localeCompare(b)))),
  );

/** Every titled schema under `paths` moves to components.schemas and is referred to by name there. */
function nameSchemas(paths: unknown, schemas: Json): unknown {
  return mapDeep(paths, (node) => {
    const title = node.title;
    if (typeof title !== "string" || !("type" in node || "anyOf" in node)) return node;
    const { description, ...shape } = node;
    const known = schemas[title] as Json | undefined;
    if (known === undefined) schemas[title] = node;
    else {
      const { description: knownDescription, ...knownShape } = known;
      if (canonical(knownShape) !== canonical(shape)) {
        throw new Error(`two different schemas are titled ${title}: ${canonical(knownShape)} ${canonical(shape)}`);
      }
      // The same shape used with different meanings: the meaning stays on each use (the response's description).
      if (knownDescription !== description) delete known.description;
    }
    return { $ref: `#/components/schemas/${title}` };
  });
}

export function refineDocument(doc: Json, refinements: Refinements): Json {
  const paths = doc.paths as Record<string, Record<string, Json>>;
  const refined = mapDeep(
    Object.fromEntries(
      Object.entries(paths).map(([path, operations]) => [
        path,
        Object.fromEntries(Object.entries(operations).map(([m, op]) => [m, refineOperation(op, refinements)])),
      ]),
    ),
    documentedAs,
  );
  const components = { ...(doc.components as Json | undefined) };
  const schemas: Json = { ...(components.schemas as Json | undefined) };
  const named = nameSchemas(refined, schemas);
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return { ...doc, paths: named, components: { ...components, schemas: sorted } };
}
