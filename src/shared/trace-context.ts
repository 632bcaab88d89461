// The trace context of the work in progress, on OpenTelemetry's API only: reading it from a request or
// message (W3C `traceparent`, or a trace id in X-Trace-Id), writing it into an outbox row, a NATS
// header or a webhook request, the log fields of the active span, and running work inside a span. tracing.ts sets up
// the SDK behind it.
import {
  type Context,
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from "@opentelemetry/api";

/** The tracer of both services; its provider is the one tracing.ts installs (a no-op one until then). */
export function tracer(): Tracer {
  return trace.getTracer("entitlement-notification");
}

const HEX_TRACE_ID = /^[0-9a-f]{32}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A trace id in X-Trace-Id: 32 hex digits, or a UUID (the same 128 bits), never all zeros. */
export function traceIdFromLegacy(value: string | undefined | null): string | undefined {
  const v = value?.trim().toLowerCase() ?? "";
  const hex = UUID.test(v) ? v.replaceAll("-", "") : HEX_TRACE_ID.test(v) ? v : undefined;
  return hex && !/^0+$/.test(hex) ? hex : undefined;
}

/**
 * The trace a request or message continues: its `traceparent` (and `tracestate`) when valid; else a trace id from
 * `x-trace-id` (see traceIdFromLegacy) under a made-up remote parent, so the spans join that trace; else none (the
 * first span starts a trace).
 */
export function extractTraceContext(get: (header: string) => string | null | undefined): Context {
  const root = context.active();
  const extracted = propagation.extract(root, undefined, {
    get: (_, key) => get(key) ?? undefined,
    keys: () => ["traceparent", "tracestate"],
  });
  if (trace.getSpanContext(extracted)) return extracted;
  const traceId = traceIdFromLegacy(get("x-trace-id"));
  return traceId ? underMadeUpParent(root, traceId) : root;
}

const randomHex = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");

function underMadeUpParent(ctx: Context, traceId: string): Context {
  return trace.setSpanContext(ctx, { traceId, spanId: randomHex(8), traceFlags: TraceFlags.SAMPLED, isRemote: true });
}

/** A new W3C trace id, for work that starts a trace of its own: 32 lower-case hex digits, never all zeros. */
export function newTraceId(): string {
  for (;;) {
    const id = randomHex(16);
    if (!/^0+$/.test(id)) return id;
  }
}

/**
 * The active context when it is already in the trace `traceId`; else a context of that trace detached from the active
 * one (its parent made up, as for X-Trace-Id): work a request starts in the background, such as a bulk run, is a trace
 * of its own.
 */
export function contextInTrace(traceId: string): Context {
  return activeTraceId() === traceId ? context.active() : underMadeUpParent(ROOT_CONTEXT, traceId);
}

/** A stored or received `traceparent` as a parent context (none when missing or invalid). */
export function contextOfTraceparent(traceparent: string | null | undefined): Context {
  return extractTraceContext((h) => (h === "traceparent" ? traceparent : undefined));
}

/** The `traceparent` of a context's span (the active one by default), to store or send on. */
export function traceparentOf(ctx: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent;
}

/** The trace id of the active span, when there is one. */
export function activeTraceId(): string | undefined {
  const sc = trace.getSpanContext(context.active());
  return sc && isSpanContextValid(sc) ? sc.traceId : undefined;
}

/** Log fields of the active span: pino's mixin (logger.ts) adds them to every line written inside a span. */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  const sc = trace.getSpanContext(context.active());
  return sc && isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

/**
 * Runs `work` in a new span (child of `parent`, the active context by default), active for everything `work` awaits;
 * a throw marks the span as an error and goes on.
 */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Record<string, string | number | boolean>; parent?: Context },
  work: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer().startSpan(name, { kind: options.kind, attributes: options.attributes }, options.parent);
  return context.with(trace.setSpan(options.parent ?? context.active(), span), async () => {
    try {
      return await work(span);
    } catch (error) {
      markFailed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

export function markFailed(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}
