// OpenTelemetry's SDK for both executables (docs/architecture.md): spans are exported over OTLP/HTTP only when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; the exporter reads the SDK's other
// OTEL_EXPORTER_OTLP_* variables itself (headers, timeout, compression), the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES. Unset, the tracer still makes ids, so traces propagate and log lines correlate, but it
// records nothing: no timing, no attributes, no export. trace-context.ts is what the rest of the code uses.
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";

export type Tracing = {
  /** Whether spans are recorded and exported. */
  exporting: boolean;
  /** Exports what is still buffered, then stops. */
  shutdown: () => Promise<void>;
};

/**
 * Installs the process-wide tracer provider, context manager (AsyncLocalStorage) and W3C propagator that
 * trace-context.ts uses through OpenTelemetry's API. Once per process: main calls it, and the tests that look at traces.
 * Without it the API is a no-op: no ids, no active span, log lines without trace fields.
 */
export function installTracing(options: { service: string; version: string; exportSpans: boolean }): Tracing {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": options.service, "service.version": options.version }).merge(
      detectResources({ detectors: [envDetector] }),
    ),
    // Off: ids are made, nothing is recorded (a non-recording span costs an id and an object, no timing or export).
    sampler: options.exportSpans ? new ParentBasedSampler({ root: new AlwaysOnSampler() }) : new AlwaysOffSampler(),
    spanProcessors: options.exportSpans ? [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })] : [],
  });
  trace.setGlobalTracerProvider(provider);
  return { exporting: options.exportSpans, shutdown: () => provider.shutdown() };
}

/** True when the environment asks for span export (the SDK's own variables). */
export function exportRequested(env: {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
}) {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}
