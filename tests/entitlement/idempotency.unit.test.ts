import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { idempotencyLockKey } from "../../src/entitlement/features/commands/lock-key.ts";
import { canonicalRequestJson, jacksonString, requestHash } from "../../src/entitlement/features/entitlements/hash.ts";
import { renderCommandReply } from "../../src/entitlement/features/entitlements/model.ts";

const vector = { user_id: "user-1", stock_keeping_unit: "sku-1", reason: "purchase", purchase_id: "purchase-1" };

describe("request hash", () => {
  test("matches the Java original's test vectors for GRANT and REVOKE", () => {
    expect(canonicalRequestJson({ action: "GRANT", ...vector })).toBe(
      '{"action":"GRANT","user_id":"user-1","stock_keeping_unit":"sku-1","reason":"purchase","purchase_id":"purchase-1"}',
    );
    expect(requestHash({ action: "GRANT", ...vector })).toBe(
      "11b37deade60a82ca76824417f43e8c150dcd5722cf107fe26cb4f6558763ff9",
    );
    expect(requestHash({ action: "REVOKE", ...vector })).toBe(
      "32b35416c8518d2e0829f3f39bbc256810f18db88f4ca57d9e5852497ceaaf9a",
    );
  });

  test("the key order is fixed, whatever order the caller's object has", () => {
    const reordered = {
      purchase_id: "purchase-1",
      reason: "purchase",
      stock_keeping_unit: "sku-1",
      user_id: "user-1",
      action: "GRANT",
    } as const;
    expect(requestHash(reordered)).toBe(requestHash({ action: "GRANT", ...vector }));
  });

  test("every field takes part: changing any one changes the hash", () => {
    const base = requestHash({ action: "GRANT", ...vector });
    for (const key of Object.keys(vector) as (keyof typeof vector)[]) {
      expect(requestHash({ action: "GRANT", ...vector, [key]: `${vector[key]}x` })).not.toBe(base);
    }
  });

  test("escapes as Jackson does: short escapes, upper-case \\u00XX for other control characters, the rest raw", () => {
    expect(jacksonString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(jacksonString("\b\t\n\f\r")).toBe('"\\b\\t\\n\\f\\r"');
    expect(jacksonString("\u0000\u0001\u001f\u000b")).toBe('"\\u0000\\u0001\\u001F\\u000B"');
    expect(jacksonString("\u007f/é漢😀")).toBe('"\u007f/é漢😀"');
  });

  test("a non-ASCII request hashes its raw UTF-8 bytes", () => {
    const request = { action: "GRANT", ...vector, user_id: "ユーザー\u001b" } as const;
    const expectedText =
      '{"action":"GRANT","user_id":"ユーザー\\u001B","stock_keeping_unit":"sku-1","reason":"purchase","purchase_id":"purchase-1"}';
    expect(canonicalRequestJson(request)).toBe(expectedText);
    expect(requestHash(request)).toBe(new Bun.CryptoHasher("sha256").update(expectedText).digest("hex"));
  });

  test("the escaped text is valid JSON that reads back as the original string", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.string({ unit: "binary-ascii" }), (a, b) => {
        expect(JSON.parse(jacksonString(a))).toBe(a);
        expect(JSON.parse(jacksonString(b))).toBe(b);
      }),
    );
  });
});

describe("advisory lock key", () => {
  test("matches the Java original's vectors", () => {
    expect(idempotencyLockKey("idem-1")).toBe(-3433042825297469223n);
    expect(idempotencyLockKey("idem-2")).toBe(3499153717498652205n);
    expect(idempotencyLockKey("")).toBe(-2039914840885289964n);
  });

  test("is the first 8 digest bytes read big-endian", () => {
    expect(BigInt.asUintN(64, idempotencyLockKey("idem-1")).toString(16)).toBe("d05b61bd4b70e0d9");
  });

  test("is deterministic and differs between keys", () => {
    expect(idempotencyLockKey("idem-1")).toBe(idempotencyLockKey("idem-1"));
    expect(idempotencyLockKey("idem-1")).not.toBe(idempotencyLockKey("idem-2"));
  });
});

describe("reply rendering", () => {
  test("a stored body whose keys JSONB reordered renders in the response schema's order", () => {
    const fromJsonb = {
      status: "ACTIVE",
      user_id: "u",
      version: 3,
      updated_at: "2026-01-17T00:00:00.000Z",
      stock_keeping_unit: "s",
    } as const;
    expect(renderCommandReply(200, fromJsonb)).toBe(
      '{"user_id":"u","stock_keeping_unit":"s","status":"ACTIVE","version":3,"updated_at":"2026-01-17T00:00:00.000Z"}',
    );
    expect(renderCommandReply(409, { message: "already ACTIVE", code: "ENTITLEMENT_STATE_CONFLICT" })).toBe(
      '{"code":"ENTITLEMENT_STATE_CONFLICT","message":"already ACTIVE"}',
    );
  });
});
