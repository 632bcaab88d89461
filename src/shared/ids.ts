// Identifier helpers both services use: the one rule for text ids (user ids, SKUs, reasons), the one UUID check and
// the one SHA-256 → int64 key derivation.

/**
 * The text rule of both services, as a JSON-Schema pattern (the API's TypeBox schemas carry it into OpenAPI): no
 * control character, C0 (U+0000–U+001F), DEL or C1 (U+0080–U+009F), and not blank, i.e. at least one character above
 * U+0020. PostgreSQL text cannot hold U+0000; a CR or LF would make an event's `aggregate_key` header unpublishable; a
 * C1 control is as invisible as a C0 one. Notification applies the same rule to the events it consumes, so an id the
 * API accepted is never one the consumer refuses.
 */
export const PLAIN_TEXT_PATTERN =
  "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\u0000-\\u0020\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$";
const PLAIN_TEXT = new RegExp(PLAIN_TEXT_PATTERN);
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this expression's purpose
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Blank: no character above U+0020 (JavaScript's trim() would also drop U+3000 and others, which are not blank). */
export const isBlank = (value: string) => ![...value].some((ch) => ch > " ");

/**
 * `value` is `min`..`max` UTF-16 units of well-formed text (no lone surrogate, which PostgreSQL's json refuses) under
 * PLAIN_TEXT_PATTERN; with `min` 0 the empty string passes too.
 */
export function isPlainText(value: string, min: number, max: number): boolean {
  if (value.length < min || value.length > max || !value.isWellFormed()) return false;
  return value === "" ? min === 0 : min === 0 ? !CONTROL.test(value) : PLAIN_TEXT.test(value);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UUID in its canonical 8-4-4-4-12 hex form, any case (PostgreSQL's `uuid` accepts both). */
export function isUuid(text: string): boolean {
  return UUID.test(text);
}

/**
 * The first 8 bytes of SHA-256(UTF-8 of `text`), read as a big-endian signed 64-bit integer: a stable key for
 * `pg_advisory_xact_lock(bigint)`.
 */
export function sha256Int64(text: string): bigint {
  const digest = new Bun.CryptoHasher("sha256").update(text).digest();
  return new DataView(digest.buffer, digest.byteOffset, 8).getBigInt64(0, false);
}
