// The headers of every idempotent command: the Idempotency-Key (checked before any other input) and the trace id the
// command's event carries.
import { Type } from "@sinclair/typebox";
import { checkIdempotencyKey, IdempotencyKeyHeader } from "../../shared/http/idempotency-key.ts";
import { activeTraceId } from "../../shared/trace-context.ts";

export const CommandHeaders = Type.Object({
  "idempotency-key": IdempotencyKeyHeader,
  "x-trace-id": Type.Optional(Type.String({ description: "Carried into the event; a random UUID when absent." })),
});

export { checkIdempotencyKey };

const TRACE_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The event's trace_id: the W3C trace id when the request came with a `traceparent`; else X-Trace-Id as given when it
 * looks like an id (printable, at most 128 characters); else the id of the trace the request started (`activeTrace`,
 * the active span's by default), or a fresh UUID when tracing is not installed.
 */
export function traceIdOf(headers: Headers, activeTrace: string | undefined = activeTraceId()): string {
  const given = headers.get("x-trace-id")?.trim();
  if (activeTrace && headers.has("traceparent")) return activeTrace;
  if (given && TRACE_ID.test(given)) return given;
  return activeTrace ?? crypto.randomUUID();
}
