import { describe, expect, test } from "bun:test";
import { Fields, functionStatement } from "../../src/entitlement/write/function-call.ts";

describe("a function's call by named arguments", () => {
  test("numbers the arguments in order, a composite's fields in its row, and keeps the values in that order", () => {
    const at = new Date("2026-11-30T08:00:00.000Z");
    const { text, values } = functionStatement("select f($args)", [
      ["p_user_id", "text", "u1"],
      ["p_skus", "text[]", ["a", "b"]],
      [
        "p_idem",
        "idempotency_call",
        new Fields([
          ["text", "k"],
          ["bigint", "42"],
          ["timestamptz", at],
        ]),
      ],
      ["p_payload", "jsonb", { a: 1 }],
    ]);
    expect(text).toBe(
      "select f(p_user_id => $1::text,\n  p_skus => $2::text[],\n  p_idem => row($3::text, $4::bigint, $5::timestamptz)::idempotency_call,\n  p_payload => $6::jsonb)",
    );
    expect(values).toEqual(["u1", ["a", "b"], "k", "42", at, { a: 1 }]);
  });

  test("the same function and arguments get the same text, whatever the values; other types another text", () => {
    const first = functionStatement("select g($args)", [["p_a", "text", "x"]]);
    const second = functionStatement("select g($args)", [["p_a", "text", null]]);
    const other = functionStatement("select g($args)", [["p_a", "int", 1]]);
    expect(second.text).toBe(first.text);
    expect(second.values).toEqual([null]);
    expect(other.text).toBe("select g(p_a => $1::int)");
  });
});
