import { expect, test } from "bun:test";
import fc from "fast-check";
import { findDuplicateKey } from "../../src/shared/http/json-keys.ts";

test("no JSON.stringify output has a repeated key, however nested or escaped", () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      expect(findDuplicateKey(JSON.stringify(value))).toBeUndefined();
      expect(findDuplicateKey(JSON.stringify(value, null, 2))).toBeUndefined();
    }),
    { numRuns: 1_000 },
  );
});

test("a key repeated in any one object is found, after unescaping", () => {
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.string(), fc.jsonValue(), (object, key, value) => {
      const repeated = `{${JSON.stringify(key)}:${JSON.stringify(value)},${JSON.stringify(object).slice(1, -1)}${
        Object.keys(object).length ? "," : ""
      }${JSON.stringify(key)}:null}`;
      expect(findDuplicateKey(`[1,{"a":${repeated}}]`)).toBe(key);
    }),
    { numRuns: 500 },
  );
  expect(findDuplicateKey('{"a":1,"\\u0061":2}')).toBe("a");
  expect(findDuplicateKey('{"a":{"a":1},"b":[{"a":1},{"a":2}]}')).toBeUndefined();
  expect(findDuplicateKey('{"x":"\\"a\\":1,","a":1}')).toBeUndefined();
});
