// One send (POST /v1/notifications): the caller's Idempotency-Key, then every recipient's notification, in one
// transaction; after the commit the players' streams (here and on the other replicas) and the delivery workers are
// woken as after a consumed batch.
import type { Db, Sql } from "../../../shared/db.ts";
import { badRequest } from "../../../shared/http/errors.ts";
import { keyConflict } from "../../../shared/http/idempotency-key.ts";
import type { Clock } from "../../../shared/runtime.ts";
import { IDEMPOTENCY_TTL_MS, type SendReply, type SendRequest } from "./model.ts";
import { claimRequestKey, findRequest, type StoredRequest, storeSentNotifications } from "./queries.ts";

export type SendDeps = {
  sql: Sql;
  now: Clock;
  /** After a commit: the players' streams of these users (this replica's and, through NATS, the others'). */
  stored?: (userIds: string[]) => void;
  /** After a commit: the delivery workers (channel and endpoints). */
  onCreated?: () => void;
  /** Counts the notifications stored. */
  onStoredCount?: (count: number) => void;
};

export type SendInput = {
  request: SendRequest;
  caller: string;
  idempotencyKey: string;
  /** The request's W3C trace context: each notification's delivery and stream event continue its trace. */
  traceparent: string | null;
};

/** SHA-256 of the checked request in a fixed order: the same body (ids deduplicated) hashes the same. */
export function sendRequestHash(r: SendRequest): string {
  const canonical = JSON.stringify([r.type, r.user_ids, r.data, r.title, r.body, r.collapse_key, r.expires_at]);
  return new Bun.CryptoHasher("sha256").update(canonical).digest("hex");
}

const replyOf = (stored: StoredRequest): SendReply => ({
  request_id: stored.requestId,
  recipients: stored.recipients,
});

/** 202 with the request's id; the same key and body again: the same answer, nothing stored; another body: 409. */
export async function sendNotifications(deps: SendDeps, input: SendInput): Promise<SendReply> {
  const { request } = input;
  const now = deps.now();
  const key = { caller: input.caller, idemKey: input.idempotencyKey };
  const fresh: StoredRequest = {
    requestHash: sendRequestHash(request),
    requestId: crypto.randomUUID(),
    recipients: request.user_ids.length,
  };
  const outcome = await deps.sql.begin(async (tx): Promise<{ replayed: SendReply } | { count: number }> => {
    const claimed = await claimRequestKey(tx, {
      ...fresh,
      ...key,
      now,
      expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
    });
    if (!claimed) return { replayed: await replayOf(tx, key, fresh.requestHash) };
    // Checked after the key: a retry of a request that committed is answered even once its expiry has passed.
    if (request.expires_at !== null && new Date(request.expires_at) <= now) {
      throw badRequest("expires_at must be in the future");
    }
    const count = await storeSentNotifications(tx, {
      request,
      requestId: fresh.requestId,
      now,
      traceparent: input.traceparent,
    });
    return { count };
  });
  if ("replayed" in outcome) return outcome.replayed;
  deps.onStoredCount?.(outcome.count);
  deps.stored?.(request.user_ids);
  deps.onCreated?.();
  return replyOf(fresh);
}

async function replayOf(tx: Db, key: { caller: string; idemKey: string }, hash: string): Promise<SendReply> {
  const stored = await findRequest(tx, key);
  if (!stored) throw new Error("a live idempotency record conflicted but cannot be read");
  if (stored.requestHash !== hash) throw keyConflict();
  return replyOf(stored);
}
