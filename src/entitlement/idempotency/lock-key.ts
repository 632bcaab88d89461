// The advisory-lock key of reference §3.2: the first 8 bytes of SHA-256(UTF-8 of the Idempotency-Key), read as a
// big-endian signed 64-bit integer. Same-key requests wait on `pg_advisory_xact_lock(key)` inside their transaction.

export function idempotencyLockKey(idempotencyKey: string): bigint {
  const digest = new Bun.CryptoHasher("sha256").update(idempotencyKey).digest();
  return new DataView(digest.buffer, digest.byteOffset, 8).getBigInt64(0, false);
}
