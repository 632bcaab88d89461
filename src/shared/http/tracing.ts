// The server span of every HTTP request: a child of the caller's `traceparent` (or of the trace id in X-Trace-Id),
// active for everything the request does, so its log lines carry its trace_id and span_id and a command stores it in
// the outbox row. Named `<METHOD> <route>` once the route is known.
import { context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { extractTraceContext, tracer } from "../trace-context.ts";

type Fetch = (request: Request) => unknown;

export function createHttpTracing() {
  const spans = new WeakMap<Request, Span>();
  return {
    /** For Elysia's `wrap`: runs the whole request (hooks, handler, error handler) inside its span. */
    wrap:
      (fetch: Fetch) =>
      (request: Request): unknown => {
        const parent = extractTraceContext((header) => request.headers.get(header));
        const span = tracer().startSpan(
          request.method,
          { kind: SpanKind.SERVER, attributes: { "http.request.method": request.method } },
          parent,
        );
        spans.set(request, span);
        return context.with(trace.setSpan(parent, span), () => fetch(request));
      },
    /** Ends the request's span with the route it matched and the status it sent. */
    finish(request: Request, route: string, status: number): void {
      const span = spans.get(request);
      if (!span) return;
      if (span.isRecording()) {
        span.updateName(`${request.method} ${route}`);
        span.setAttributes({ "http.route": route, "http.response.status_code": status });
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}
