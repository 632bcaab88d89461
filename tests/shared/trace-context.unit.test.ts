import { expect, test } from "bun:test";
import { traceIdOf } from "../../src/entitlement/edge/headers.ts";
import { newTraceId, traceIdFromLegacy } from "../../src/shared/trace-context.ts";

test("X-Trace-Id names a W3C trace when it is 32 hex digits or a UUID, never when all zeros or anything else", () => {
  expect(traceIdFromLegacy("0AF7651916CD43DD8448EB211C80319C")).toBe("0af7651916cd43dd8448eb211c80319c");
  expect(traceIdFromLegacy("3f1e2d4c-5b6a-4789-9abc-def012345678")).toBe("3f1e2d4c5b6a47899abcdef012345678");
  for (const other of [
    "00000000000000000000000000000000",
    "req-42",
    "0af7651916cd43dd8448eb211c80319",
    "",
    undefined,
  ]) {
    expect(traceIdFromLegacy(other), String(other)).toBeUndefined();
  }
});

test("the event's trace_id: the W3C trace with a traceparent, else X-Trace-Id as given, else the started trace", () => {
  const active = "0af7651916cd43dd8448eb211c80319c";
  const headers = (h: Record<string, string>) => new Headers(h);
  const traceparent = `00-${active}-b7ad6b7169203331-01`;
  expect(traceIdOf(headers({ traceparent, "x-trace-id": "req-42" }), active)).toBe(active);
  expect(traceIdOf(headers({ "x-trace-id": "req-42" }), active), "the Java original's verbatim X-Trace-Id").toBe(
    "req-42",
  );
  expect(traceIdOf(headers({ "x-trace-id": "has space" }), active)).toBe(active);
  expect(traceIdOf(headers({}), active)).toBe(active);
  expect(traceIdOf(headers({}), undefined), "no tracing installed: a UUID as before").toMatch(/^[0-9a-f-]{36}$/);
});

test("work that starts a trace of its own gets a W3C trace id: 32 lower-case hex digits, never all zeros, never twice", () => {
  const ids = Array.from({ length: 1000 }, () => newTraceId());
  for (const id of ids) expect(id).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
  expect(new Set(ids).size).toBe(ids.length);
});
