// What a request finds under its Idempotency-Key (docs/api.md), shared by every command: the same request gets the
// stored reply byte for byte, a different one a key conflict (never stored).
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

/** A live record, as the command functions return it (idempotency_open in db/entitlement/). */
export type IdempotencyRecord = {
  requestHash: string;
  responseCode: number;
  responseBody: unknown;
  expiresAt: Date;
};

export type ErrorReply = { code: string; message: string };

export const KEY_CONFLICT: ErrorReply = { code: "IDEMPOTENCY_KEY_CONFLICT", message: "Idempotency-Key conflict" };

export type Replay<T> =
  | { kind: "key_conflict"; status: 409; body: ErrorReply }
  | { kind: "replayed"; status: number; body: T | ErrorReply };

/**
 * The stored reply when `hash` is the stored request's, else a key conflict; `ok` is the shape of the command's
 * stored success (200, or 201 for a reservation).
 */
export function replayStored<T>(stored: IdempotencyRecord, hash: string, ok: TSchema): Replay<T> {
  if (stored.requestHash !== hash) return { kind: "key_conflict", status: 409, body: KEY_CONFLICT };
  const body = stored.responseBody;
  const code = stored.responseCode;
  const replayable = (code < 300 && Value.Check(ok, body)) || (code === 409 && isErrorReply(body));
  if (!replayable) throw new Error(`stored idempotency response (code ${code}) cannot be replayed`);
  return { kind: "replayed", status: code, body: body as T | ErrorReply };
}

export function isErrorReply(body: unknown): body is ErrorReply {
  const b = body as Partial<ErrorReply> | null;
  return typeof b?.code === "string" && typeof b.message === "string";
}
