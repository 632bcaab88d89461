// What a request finds under its Idempotency-Key (reference §3.3), shared by every write route: the same request gets
// the stored reply byte for byte, a different one a key conflict (never stored).
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { IdempotencyRecord } from "./queries.ts";

export type ErrorReply = { code: string; message: string };

export const KEY_CONFLICT: ErrorReply = { code: "IDEMPOTENCY_KEY_CONFLICT", message: "Idempotency-Key conflict" };

export type Replay<T> =
  | { kind: "key_conflict"; status: 409; body: ErrorReply }
  | { kind: "replayed"; status: number; body: T | ErrorReply };

/** The stored reply when `hash` is the stored request's, else a key conflict; `ok` is the shape of a stored 200. */
export function replayStored<T>(stored: IdempotencyRecord, hash: string, ok: TSchema): Replay<T> {
  if (stored.requestHash !== hash) return { kind: "key_conflict", status: 409, body: KEY_CONFLICT };
  const body = stored.responseBody;
  const replayable =
    (stored.responseCode === 200 && Value.Check(ok, body)) || (stored.responseCode === 409 && isErrorReply(body));
  if (!replayable) throw new Error(`stored idempotency response (code ${stored.responseCode}) cannot be replayed`);
  return { kind: "replayed", status: stored.responseCode, body: body as T | ErrorReply };
}

export function isErrorReply(body: unknown): body is ErrorReply {
  const b = body as Partial<ErrorReply> | null;
  return typeof b?.code === "string" && typeof b.message === "string";
}

/** Under the advisory lock, after a lookup that found no live record, the slot is free; anything else is a bug. */
export function assertStored(stored: number): void {
  if (stored !== 1) throw new Error("idempotency invariant violated: a live record appeared under the lock");
}
