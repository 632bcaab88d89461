// The HTTP skeleton both services share: request ids, the error envelope for every status (404 and 405 included),
// HTTP metrics, /healthz, /readyz, /metrics and /openapi.json generated from the route schemas.
import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import type { Registry } from "prom-client";
import { buildInfo } from "../build-info.ts";
import type { Logger } from "../logger.ts";
import { buildInfoMetric, httpMetrics, readinessMetric } from "../metrics.ts";
import { ApiError, type ErrorCode, errorResponse, errorSchema, jsonResponse } from "./errors.ts";
import { type ApiDocumentation, openapiRoute } from "./openapi.ts";
import { routePattern } from "./route-pattern.ts";

export type HttpDeps = {
  service: string;
  version: string;
  log: Logger;
  registry: Registry;
  /** Throws (or rejects) when the service cannot do its work; /readyz answers 503 then. */
  readiness: () => Promise<void>;
  /** Bun.serve's idle timeout (seconds) used when the app listens; Bun's default if unset. */
  serve?: { idleTimeout?: number };
  /**
   * What /openapi.json says beyond the routes: the API's description, its security schemes and the default
   * requirement. /healthz and /readyz are always documented as open.
   */
  documentation?: ApiDocumentation;
};

const UP = Type.Object({ status: Type.Literal("UP") }, { description: "UP" });
const LIVE = Type.Object(
  {
    status: Type.Literal("UP"),
    service: Type.String({ examples: ["entitlement"] }),
    version: Type.String({ description: "The project version.", examples: ["0.1.0"] }),
    commit: Type.String({ description: "The git commit it was built from, or `unknown`.", examples: ["1a2b3c4d5e6f"] }),
    bun: Type.String({ description: "The Bun runtime's version.", examples: ["1.4.4"] }),
  },
  { description: "UP, and what is running" },
);
/** Probes need no credentials, in both services. */
const OPEN = { security: [] };

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

function statusCode(status: number): ErrorCode {
  switch (status) {
    case 400:
      return "BAD_REQUEST";
    case 404:
      return "NOT_FOUND";
    case 405:
      return "METHOD_NOT_ALLOWED";
    case 413:
      return "PAYLOAD_TOO_LARGE";
    case 415:
      return "UNSUPPORTED_MEDIA_TYPE";
    default:
      return "INTERNAL_ERROR";
  }
}

export function createHttpApp(deps: HttpDeps) {
  const metrics = httpMetrics(deps.registry);
  const build = buildInfo(deps.service, deps.version);
  buildInfoMetric(deps.registry, build);
  readinessMetric(deps.registry, deps.readiness);
  const started = new WeakMap<Request, number>();
  // The status an error reply carried: Elysia's `set.status` does not see Responses built in onError.
  const sentStatus = new WeakMap<Request, number>();

  function errorReply(code: unknown, error: unknown, request: Request, path: string, requestId: string): Response {
    const headers = { "x-request-id": requestId };
    const apiError = error instanceof ApiError ? error : (error as { cause?: unknown })?.cause;
    if (apiError instanceof ApiError) {
      return errorResponse(apiError.status, apiError.code, apiError.message, { ...headers, ...apiError.headers });
    }
    if (code === "NOT_FOUND") {
      const allowed = app.routes
        .filter((r) => r.method !== request.method && routePattern(r.path).test(path))
        .map((r) => r.method);
      if (allowed.length > 0) {
        return errorResponse(405, "METHOD_NOT_ALLOWED", `method ${request.method} is not allowed here`, {
          ...headers,
          allow: [...new Set(allowed)].join(", "),
        });
      }
      return errorResponse(404, "NOT_FOUND", "no such resource", headers);
    }
    if (code === "PARSE") return errorResponse(400, "BAD_REQUEST", "request body is invalid", headers);
    if (code === "VALIDATION") return errorResponse(400, "BAD_REQUEST", "request is invalid", headers);
    const status =
      typeof (error as { status?: unknown })?.status === "number" ? (error as { status: number }).status : 500;
    if (status >= 500) {
      deps.log.error({ err: error, path, method: request.method, request_id: requestId }, "request failed");
      return errorResponse(500, "INTERNAL_ERROR", "internal error", headers);
    }
    return errorResponse(status, statusCode(status), "request rejected", headers);
  }

  const app = new Elysia({
    name: `${deps.service}-http`,
    strictPath: true,
    ...(deps.serve ? { serve: deps.serve } : {}),
  })
    .use(openapiRoute(deps.service, deps.version, deps.documentation))
    .onRequest(({ request, set }) => {
      started.set(request, performance.now());
      const given = request.headers.get("x-request-id");
      set.headers["x-request-id"] = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    })
    .onError(({ code, error, request, path, set }) => {
      const response = errorReply(code, error, request, path, String(set.headers["x-request-id"] ?? ""));
      sentStatus.set(request, response.status);
      return response;
    })
    .onAfterResponse(({ request, route, set, responseValue }) => {
      const start = started.get(request);
      // Error replies and routes that build their own Response carry the status there, not in `set`.
      const status =
        sentStatus.get(request) ??
        (responseValue instanceof Response ? responseValue.status : typeof set.status === "number" ? set.status : 200);
      metrics.observe(
        request.method,
        route || "unmatched",
        status,
        start === undefined ? 0 : performance.now() - start,
      );
    })
    .get("/healthz", () => ({ status: "UP" as const, ...build }), {
      response: { 200: LIVE },
      detail: { summary: "Liveness, and what is running: 200 while the process runs", tags: ["operations"], ...OPEN },
    })
    .get(
      "/readyz",
      async () => {
        try {
          await deps.readiness();
          return jsonResponse(200, { status: "UP" });
        } catch (error) {
          deps.log.warn({ err: error }, "not ready");
          return errorResponse(503, "NOT_READY", "not ready");
        }
      },
      {
        response: {
          200: UP,
          503: errorSchema("NOT_READY: a dependency (the database, the consumer) is not available"),
        },
        detail: { summary: "Readiness: 200 when the service can do its work", tags: ["operations"], ...OPEN },
      },
    )
    .get(
      "/metrics",
      async () =>
        new Response(await deps.registry.metrics(), { headers: { "content-type": deps.registry.contentType } }),
      {
        response: {
          200: Type.String({ description: "Prometheus text exposition format" }),
          ...deps.documentation?.metricsErrors,
        },
        detail: { summary: "Prometheus metrics", tags: ["operations"] },
      },
    );
  return app;
}
