// Identifier helpers both services use: the one UUID check and the one SHA-256 → int64 key derivation.

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
