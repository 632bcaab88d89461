// The advisory-lock key of the Java original: the first 8 bytes of SHA-256(UTF-8 of the Idempotency-Key), read as a
// big-endian signed 64-bit integer. Same-key requests wait on `pg_advisory_xact_lock(key)` inside their transaction.
import { sha256Int64 } from "../../../shared/ids.ts";

export function idempotencyLockKey(idempotencyKey: string): bigint {
  return sha256Int64(idempotencyKey);
}
