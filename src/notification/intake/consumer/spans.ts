// One consume span per JetStream message: a child of the relay's publish span (the `traceparent` header), ended when
// the message is settled. The notification row stores its traceparent, so the delivery continues the same trace.

import type { JsMsg } from "@nats-io/jetstream";
import { type Context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { contextOfTraceparent, traceparentOf, tracer } from "../../../shared/trace-context.ts";

export type ConsumeSpan = { span: Span; context: Context; traceparent: string | undefined };

export function startConsumeSpan(message: JsMsg): ConsumeSpan {
  const parent = contextOfTraceparent(message.headers?.get("traceparent"));
  const span = tracer().startSpan(
    `${message.subject} process`,
    {
      kind: SpanKind.CONSUMER,
      attributes: { "messaging.system": "nats", "messaging.nats.stream_sequence": message.seq },
    },
    parent,
  );
  const context = trace.setSpan(parent, span);
  return { span, context, traceparent: traceparentOf(context) };
}

/** Ends the span with how the message was settled; anything but an ack is an error on the span. */
export function endConsumeSpan(s: ConsumeSpan, outcome: "ack" | "nak" | "term", reason?: string): void {
  if (s.span.isRecording()) {
    s.span.setAttribute("messaging.operation.outcome", outcome);
    if (outcome !== "ack") s.span.setStatus({ code: SpanStatusCode.ERROR, message: reason ?? outcome });
  }
  s.span.end();
}
