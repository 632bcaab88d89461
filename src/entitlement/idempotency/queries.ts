// SQL for idempotency_keys (reference §3.2, §3.3, §3.5; retention deletes live in retention/). Records are scoped per caller: the primary key is
// (caller, idem_key). "Live" means `expires_at > now()` by the database clock, as in the reference.
import type { JSONValue } from "postgres";
import type { Db } from "../../shared/db.ts";
import { idempotencyLockKey } from "./lock-key.ts";

export type IdempotencyRecord = {
  requestHash: string;
  responseCode: number;
  responseBody: unknown;
  expiresAt: Date;
};

export type Key = { caller: string; key: string };

/** The live record of a key, or undefined when there is none or it has expired. */
export async function findLiveIdempotencyRecord(db: Db, { caller, key }: Key): Promise<IdempotencyRecord | undefined> {
  const [row] = await db<IdempotencyRecord[]>`
    select request_hash as "requestHash", response_code as "responseCode", response_body as "responseBody",
           expires_at as "expiresAt"
    from idempotency_keys
    where caller = ${caller} and idem_key = ${key} and expires_at > now()`;
  return row;
}

/**
 * Stores a response unless a live record holds the key; an expired record is overwritten.
 * Returns the number of rows written: 1 when stored, 0 when a live record was in the way.
 */
export async function storeIdempotencyRecord(db: Db, record: Key & IdempotencyRecord): Promise<number> {
  const result = await db`${idempotencyUpsert(db, record)}`;
  return result.count;
}

/** The statement of `storeIdempotencyRecord`, as a fragment that other statements embed in a CTE. */
export function idempotencyUpsert(db: Db, record: Key & IdempotencyRecord) {
  return db`
    insert into idempotency_keys (caller, idem_key, request_hash, response_code, response_body, expires_at)
    values (${record.caller}, ${record.key}, ${record.requestHash}, ${record.responseCode},
            ${db.json(record.responseBody as JSONValue)}, ${record.expiresAt})
    on conflict (caller, idem_key) do update set
      request_hash = excluded.request_hash,
      response_code = excluded.response_code,
      response_body = excluded.response_body,
      expires_at = excluded.expires_at
    where idempotency_keys.expires_at <= now()`;
}

/** Serializes every request that uses this key until the transaction ends (reference §3.2). */
export async function lockIdempotencyKey(db: Db, key: string): Promise<void> {
  await db`select pg_advisory_xact_lock(${idempotencyLockKey(key).toString()}::bigint)`;
}
