// The Idempotency-Key header of every idempotent command of both services (docs/api.md "Idempotency"): checked before
// any other input, so a bad key is the first thing a caller hears about.
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { ApiError, badRequest } from "./errors.ts";

export const IdempotencyKeyHeader = Type.String({
  maxLength: 255,
  pattern: "^[\\x20-\\x2b\\x2d-\\x7e]*[\\x21-\\x2b\\x2d-\\x7e][\\x20-\\x2b\\x2d-\\x7e]*$",
  description:
    "Required, once; printable ASCII without a comma (two headers arrive joined by one), at most 255 characters. Same key and request → the stored reply.",
});

/** The Idempotency-Key header: required, once, printable ASCII without a comma, at most 255 characters. */
export function checkIdempotencyKey(headers: Headers): string {
  const key = headers.get("idempotency-key");
  if (key === null || key.trim() === "") throw badRequest("Idempotency-Key is required");
  // Two Idempotency-Key headers reach us joined by ", " into one value that neither caller chose: refused, and so is a
  // comma in one header, which cannot be told apart from that.
  if (key.includes(",")) throw badRequest("Idempotency-Key must be sent once and must not contain a comma");
  if (key.length > (IdempotencyKeyHeader.maxLength ?? 255)) {
    throw badRequest(`Idempotency-Key must be at most ${IdempotencyKeyHeader.maxLength} characters`);
  }
  if (!Value.Check(IdempotencyKeyHeader, key)) throw badRequest("Idempotency-Key must be printable ASCII");
  return key;
}

/** The same key with another request: the stored answer stays. */
export const keyConflict = () => new ApiError(409, "IDEMPOTENCY_KEY_CONFLICT", "Idempotency-Key conflict");
