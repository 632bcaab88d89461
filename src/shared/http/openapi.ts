// /openapi.json of both services: Elysia's OpenAPI plugin over the route schemas, plus what routes do not say (the
// description, the security schemes, the tags). docs/openapi*.json are this document, committed (`bun run
// docs:openapi`).
import { openapi } from "@elysiajs/openapi";
import type { TObject } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { errorSchema } from "./errors.ts";
import { type Refinements, refineDocument } from "./openapi-refine.ts";

export type ApiDocumentation = {
  description: string;
  /** Bearer schemes by name, each with its description. */
  bearerSchemes?: Record<string, string>;
  /** The schemes every operation needs unless it says otherwise (an empty list: none). */
  security?: string[];
  tags?: { name: string; description: string }[];
  /** The error responses of /metrics, where a token guards it. */
  metricsErrors?: Record<number, TObject>;
  /** What the document says beyond the route schemas (openapi-refine.ts); 405 is added for every service. */
  refinements?: Refinements;
};

/** Both services answer a known path with another method so (shared/http/error-reply.ts). */
const METHOD_NOT_ALLOWED = errorSchema("METHOD_NOT_ALLOWED: the path exists with other methods, listed in `Allow`");

const SPEC_PATH = "/openapi.json";

const title = (service: string) => service.charAt(0).toUpperCase() + service.slice(1);

/** The document's header: everything /openapi.json says that the routes do not. */
function header(service: string, version: string, doc: ApiDocumentation | undefined) {
  const schemes = Object.entries(doc?.bearerSchemes ?? {});
  return {
    info: { title: `${title(service)} API`, version, description: doc?.description ?? "" },
    // Relative: the server that serves the document (for the committed copy, wherever the service runs).
    servers: [{ url: "/" }],
    tags: doc?.tags ?? [],
    security: (doc?.security ?? []).map((name) => ({ [name]: [] })),
    components: {
      securitySchemes: Object.fromEntries(
        schemes.map(([name, description]) => [name, { type: "http" as const, scheme: "bearer", description }]),
      ),
    },
  };
}

/**
 * A copy without `additionalProperties: false`. Elysia writes it into a route's object schemas when it first compiles
 * them (to strip unknown fields), so without this the document would change after the first request. No schema of
 * ours is closed anyway: unknown request fields are ignored, and responses may gain fields in a minor release.
 */
export function withOpenObjects(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withOpenObjects);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key, v]) => !(key === "additionalProperties" && v === false))
      .map(([key, v]) => [key, withOpenObjects(v)]),
  );
}

export function openapiRoute(service: string, version: string, documentation: ApiDocumentation | undefined) {
  const refinements: Refinements = {
    ...documentation?.refinements,
    everyOperation: { 405: METHOD_NOT_ALLOWED, ...documentation?.refinements?.everyOperation },
  };
  return (
    new Elysia({ name: `${service}-openapi` })
      // Registered before the plugin's route, so that it applies to it.
      .onAfterHandle({ as: "global" }, ({ path, response }) =>
        path === SPEC_PATH
          ? refineDocument(withOpenObjects(response) as Record<string, unknown>, refinements)
          : undefined,
      )
      .use(
        openapi({
          provider: null,
          specPath: SPEC_PATH,
          path: "/openapi",
          documentation: header(service, version, documentation),
          exclude: { paths: [SPEC_PATH, "/openapi"] },
        }),
      )
  );
}
