// The HTTP skeleton both services share: request ids, the error envelope for every status (404 and 405 included),
// HTTP metrics, /healthz, /readyz (also under /actuator/health/…), /metrics and /openapi.json generated from the route schemas.
import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import type { Registry } from "prom-client";
import { buildInfo } from "../build-info.ts";
import type { Logger } from "../logger.ts";
import { buildInfoMetric, httpMetrics, readinessMetric } from "../metrics.ts";
import { createReadinessLog } from "../readiness.ts";
import { errorReply } from "./error-reply.ts";
import { errorResponse, errorSchema, jsonResponse } from "./errors.ts";
import { type ApiDocumentation, openapiRoute } from "./openapi.ts";
import { canonicalRequest } from "./path.ts";
import { createHttpTracing } from "./tracing.ts";

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

const UP = Type.Object({ status: Type.Literal("UP") }, { title: "Ready", description: "UP" });
const LIVE = Type.Object(
  {
    status: Type.Literal("UP"),
    service: Type.String({ examples: ["entitlement"] }),
    version: Type.String({ description: "The project version.", examples: ["0.1.0"] }),
    commit: Type.String({ description: "The git commit it was built from, or `unknown`.", examples: ["1a2b3c4d5e6f"] }),
    bun: Type.String({ description: "The Bun runtime's version.", examples: ["1.4.4"] }),
  },
  { title: "Live", description: "UP, and what is running" },
);
/** Probes need no credentials, in both services. */
const PROBE = { tags: ["operations"], security: [] };
const LIVE_SUMMARY = "Liveness, and what is running: 200 while the process runs";
const READY_SUMMARY = "Readiness: 200 when the service can do its work";
/** /healthz and /readyz under the actuator paths; open like them. */
export const LIVENESS_ALIAS = "/actuator/health/liveness";
export const READINESS_ALIAS = "/actuator/health/readiness";
export const PROBE_PATHS: readonly string[] = ["/healthz", "/readyz", LIVENESS_ALIAS, READINESS_ALIAS];

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

type Fetch = (request: Request) => unknown;

/**
 * Elysia's `wrap`, around everything else: the request is made canonical (shared/http/path.ts) before any hook, route
 * or span sees it, so every one of them reads the same path; a target that is not a path is 400 before any route.
 */
function canonicalWrap(tracing: ReturnType<typeof createHttpTracing>) {
  return (fetch: Fetch) => {
    const traced = tracing.wrap(fetch);
    return (request: Request): unknown => {
      const canonical = canonicalRequest(request);
      return canonical ? traced(canonical) : errorResponse(400, "BAD_REQUEST", "the request target must be a path");
    };
  };
}

/**
 * Request ids, timing and the status each request was answered with, for the HTTP metrics. The status of an error
 * reply is remembered here: Elysia's `set.status` does not see Responses built in onError.
 */
function createRequestTracking(metrics: ReturnType<typeof httpMetrics>, tracing: ReturnType<typeof createHttpTracing>) {
  const started = new WeakMap<Request, number>();
  const sentStatus = new WeakMap<Request, number>();
  return {
    start(request: Request, set: { headers: Record<string, unknown> }): void {
      started.set(request, performance.now());
      const given = request.headers.get("x-request-id");
      set.headers["x-request-id"] = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    },
    sent(request: Request, response: Response): Response {
      sentStatus.set(request, response.status);
      return response;
    },
    finish(request: Request, route: string, setStatus: unknown, responseValue: unknown): void {
      const start = started.get(request);
      // Error replies and routes that build their own Response carry the status there, not in `set`.
      const status =
        sentStatus.get(request) ??
        (responseValue instanceof Response ? responseValue.status : typeof setStatus === "number" ? setStatus : 200);
      metrics.observe(
        request.method,
        route || "unmatched",
        status,
        start === undefined ? 0 : performance.now() - start,
      );
      tracing.finish(request, route || "unmatched", status);
    },
  };
}

/** The /readyz handler: UP, or 503 while a dependency is not available (logged when that changes). */
function readyProbe(deps: Pick<HttpDeps, "log" | "readiness">): () => Promise<Response> {
  const readinessLog = createReadinessLog(deps.log);
  return async () => {
    try {
      await deps.readiness();
      readinessLog.ready();
      return jsonResponse(200, { status: "UP" });
    } catch (error) {
      readinessLog.notReady(error);
      return errorResponse(503, "NOT_READY", "not ready");
    }
  };
}

export function createHttpApp(deps: HttpDeps) {
  const build = buildInfo(deps.service, deps.version);
  buildInfoMetric(deps.registry, build);
  readinessMetric(deps.registry, deps.readiness);
  const tracing = createHttpTracing();
  const tracking = createRequestTracking(httpMetrics(deps.registry), tracing);
  const live = () => ({ status: "UP" as const, ...build });
  const ready = readyProbe(deps);
  const readyResponses = {
    200: UP,
    503: errorSchema("NOT_READY: a dependency (the database, the consumer) is not available"),
  };

  const app = new Elysia({
    name: `${deps.service}-http`,
    strictPath: true,
    // One router: Bun's own (which Elysia would otherwise hand the static routes to) would route requests before the
    // canonical request exists, on its own reading of the target.
    systemRouter: false,
    ...(deps.serve ? { serve: deps.serve } : {}),
  })
    .use(openapiRoute(deps.service, deps.version, deps.documentation))
    // biome-ignore lint/suspicious/noExplicitAny: Elysia types `wrap` for any function; ours takes and returns a fetch.
    .wrap(canonicalWrap(tracing) as any)
    .onRequest(({ request, set }) => tracking.start(request, set))
    .onError(({ code, error, request, path, set }) => {
      // `app.routes` is read when a request fails, after every route of the service is mounted (405 needs them all).
      const requestId = String(set.headers["x-request-id"] ?? "");
      return tracking.sent(request, errorReply({ code, error, request, path, requestId }, app.routes, deps.log));
    })
    .onAfterResponse(({ request, route, set, responseValue }) =>
      tracking.finish(request, route, set.status, responseValue),
    )
    .get("/healthz", live, { response: { 200: LIVE }, detail: { summary: LIVE_SUMMARY, ...PROBE } })
    .get("/readyz", ready, { response: readyResponses, detail: { summary: READY_SUMMARY, ...PROBE } })
    // The same probes under the actuator paths (/actuator/health/*) that existing Kubernetes manifests wait on: those
    // deployments keep working without a change.
    .get(LIVENESS_ALIAS, live, { response: { 200: LIVE }, detail: { summary: LIVE_SUMMARY, ...PROBE } })
    .get(READINESS_ALIAS, ready, { response: readyResponses, detail: { summary: READY_SUMMARY, ...PROBE } })
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
