// What the generated /openapi.json needs beyond Elysia's rendering of the route schemas, so that a generated client is
// a good one: query values typed as what they mean (`limit` an integer, though read as text), the responses every
// route may give (405, and 431 where headers are limited), `Retry-After` on 429 and 503, what a route declares outside
// its schemas (the conditional GET's headers and 304), the headers every request may send and every response carries
// (`traceparent`, `X-Request-Id`, `WWW-Authenticate` on 401 and 403), and every titled schema as a named component
// that responses refer to, so that clients get one named type per schema instead of an anonymous copy per use.
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

/** Every request may send these (shared/http/app.ts, shared/http/tracing.ts); an invalid value is ignored, not refused. */
const REQUEST_HEADERS: Json[] = [
  {
    name: "traceparent",
    in: "header",
    required: false,
    description:
      "W3C trace context: the request's span continues this trace, and so do the events a command publishes. Ignored when malformed.",
    schema: { type: "string", example: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
  },
  {
    name: "x-request-id",
    in: "header",
    required: false,
    description:
      "Echoed in the response's X-Request-Id and logged with the request; any other value is replaced by a new id.",
    schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,128}$", example: "req-7f3a" },
  },
];

/** On every response: the id the request is logged under. */
const REQUEST_ID = {
  "X-Request-Id": {
    description: "The request's X-Request-Id when it sent a valid one, otherwise one the service made (a UUID).",
    schema: { type: "string" },
  },
};

/** The bearer challenge (RFC 6750) that comes with every refusal of a token. */
const CHALLENGES: Record<string, Json> = {
  "401": {
    "WWW-Authenticate": {
      description: 'The bearer challenge: `Bearer`, or `Bearer error="invalid_token"` for a token that fails a check.',
      schema: { type: "string" },
      example: 'Bearer error="invalid_token"',
    },
  },
  "403": {
    "WWW-Authenticate": {
      description:
        'The bearer challenge naming the scope the token lacks: `Bearer error="insufficient_scope", scope="…"`.',
      schema: { type: "string" },
    },
  },
};

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

/** The headers a response of this status carries beyond its route's own. */
function statusHeaders(status: string): Json {
  if (status === "405") return ALLOW;
  if (status === "429" || status === "503") return RETRY_AFTER;
  return CHALLENGES[status] ?? {};
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
    const body =
      (response.content as Json | undefined)?.type === "null" ? { description: response.description } : response;
    const headers = { ...(response.headers as Json | undefined), ...statusHeaders(status), ...REQUEST_ID };
    responses[status] = { ...body, headers };
  }
  const parameters = [
    ...((operation.parameters as Json[] | undefined) ?? []),
    ...(extra?.parameters ?? []),
    ...structuredClone(REQUEST_HEADERS),
  ];
  return { ...operation, parameters, responses };
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
