// The decoded event that docs/events.md shows is what protobuf-es prints for a real EntitlementEvent: every field of
// the message, no other, so the sample cannot fall behind the .proto file.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { EntitlementEventSchema } from "../../src/gen/entitlement_event_pb.ts";

const guide = readFileSync(resolve(import.meta.dir, "../../docs/events.md"), "utf8");

test("events.md's decoded grant has every field of EntitlementEvent, as toJson prints them", () => {
  const block = /A decoded grant[\s\S]*?```json\n([\s\S]*?)```/.exec(guide)?.[1];
  expect(block, "events.md shows a decoded grant").toBeDefined();
  const shown = JSON.parse(block as string) as JsonValue;
  const printed = toJson(EntitlementEventSchema, fromJson(EntitlementEventSchema, shown), { alwaysEmitImplicit: true });
  expect(shown).toEqual(printed);
  expect(Object.keys(shown as object)).toContain("expiresAt");
  expect((shown as { traceId: string }).traceId, "a W3C trace id").toMatch(/^[0-9a-f]{32}$/);
});
