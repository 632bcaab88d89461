// The 400 message for input a schema refused, from the first error TypeBox reports (as Elysia hands it over): the field
// as a client writes it, the rule, the valid values of a set of literals, and the variant of a union the input was
// meant to be. The schemas are the services' own.
import { describe, expect, test } from "bun:test";
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
// Elysia registers the string formats (uuid, date-time) the services' schemas use; a route checks with them.
import "elysia";
import { Type } from "@sinclair/typebox";
import { BundleBody } from "../../src/entitlement/features/bundles/model.ts";
import { EntitlementStatus } from "../../src/entitlement/features/entitlements/model.ts";
import { ReservationBody } from "../../src/entitlement/features/points/model.ts";
import { ReadBody } from "../../src/notification/features/players/model.ts";
import { Platform } from "../../src/notification/features/push/model.ts";
import { fieldOf, validationMessage } from "../../src/shared/http/validation-message.ts";

const refused = (schema: TSchema, value: unknown, on = "body") =>
  validationMessage({ type: on, valueError: Value.Errors(schema, value).First() });

describe("the field", () => {
  test("is written as a client writes it", () => {
    expect(fieldOf("body", "")).toBe("body");
    expect(fieldOf("body", "/event_types/0")).toBe("body.event_types[0]");
    expect(fieldOf("query", "/limit")).toBe("query.limit");
    expect(fieldOf("body", "/a~1b/x y")).toBe('body["a/b"]["x y"]');
    expect(fieldOf("body", `/${"k".repeat(200)}`), "a long key is cut").toBe(`body["${"k".repeat(64)}…"]`);
  });
});

describe("the rule", () => {
  test("a literal set lists its values", () => {
    expect(refused(Type.Object({ platform: Platform }), { platform: "apns" })).toBe(
      "body.platform: must be one of webpush, fcm",
    );
    expect(refused(Type.Object({ status: EntitlementStatus }), { status: "active" }, "query")).toBe(
      "query.status: must be one of ACTIVE, REVOKED",
    );
  });

  test("a union follows the variant the input was meant to be, or names them all", () => {
    expect(refused(ReadBody, { notification_ids: ["x"] })).toBe("body.notification_ids[0]: must be a UUID");
    expect(refused(ReadBody, { up_to_seq: -1 })).toBe("body.up_to_seq: must be an integer from 0 to 9007199254740991");
    expect(refused(ReadBody, {})).toBe("body: must be an object with notification_ids or an object with up_to_seq");
  });

  test("numbers, lengths, formats, arrays and absent fields (Entitlement's schemas)", () => {
    const reservation = { user_id: "u", point_amount: 5, execute_at: "2026-01-15T10:00:00+09:00" };
    expect(refused(ReservationBody, { ...reservation, point_amount: 0 })).toBe(
      "body.point_amount: must be an integer from 1 to 1000000000",
    );
    expect(refused(ReservationBody, { ...reservation, reason: "" })).toBe(
      "body.reason: must be a string of 1 to 64 characters",
    );
    expect(refused(BundleBody, { user_id: "u", stock_keeping_units: ["a"], reason: "r" })).toBe(
      "body.purchase_id: is required (a string of 1 to 128 characters, not blank and without control characters)",
    );
    expect(refused(ReservationBody, { user_id: "u", point_amount: 5 })).toStartWith("body.execute_at: is required (");
    const bundle = { user_id: "u", stock_keeping_units: ["a", "a"], reason: "r", purchase_id: "p" };
    expect(refused(BundleBody, bundle)).toBe("body.stock_keeping_units: must not repeat an item");
  });

  test("without an error to read, the part of the request is still named", () => {
    expect(validationMessage({ type: "query" })).toBe("query: is invalid");
  });
});
