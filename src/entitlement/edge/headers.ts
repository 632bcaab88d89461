// The headers of every idempotent command: the Idempotency-Key (checked before any other input) and the trace id the
// command's event carries.
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { badRequest } from "../../shared/http/errors.ts";
import { activeTraceId } from "../../shared/trace-context.ts";

export const CommandHeaders = Type.Object({
  "idempotency-key": Type.String({
    maxLength: 255,
    pattern: "^[\\x20-\\x2b\\x2d-\\x7e]*[\\x21-\\x2b\\x2d-\\x7e][\\x20-\\x2b\\x2d-\\x7e]*$",
    description:
      "Required, once; printable ASCII without a comma (two headers arrive joined by one), at most 255 characters. Same key and request → the stored reply.",
  }),
  "x-trace-id": Type.Optional(Type.String({ description: "Carried into the event; a random UUID when absent." })),
});

const KEY_SCHEMA = CommandHeaders.properties["idempotency-key"];
const TRACE_ID = /^[\x21-\x7e]{1,128}$/;

/** The Idempotency-Key header: required, once, printable ASCII without a comma, at most 255 characters. */
export function checkIdempotencyKey(headers: Headers): string {
  const key = headers.get("idempotency-key");
  if (key === null || key.trim() === "") throw badRequest("Idempotency-Key is required");
  // Two Idempotency-Key headers reach us joined by ", " into one value that neither caller chose: refused, and so is a
  // comma in one header, which cannot be told apart from that.
  if (key.includes(",")) throw badRequest("Idempotency-Key must be sent once and must not contain a comma");
  if (key.length > (KEY_SCHEMA.maxLength ?? 255)) {
    throw badRequest(`Idempotency-Key must be at most ${KEY_SCHEMA.maxLength} characters`);
  }
  if (!Value.Check(KEY_SCHEMA, key)) throw badRequest("Idempotency-Key must be printable ASCII");
  return key;
}

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
