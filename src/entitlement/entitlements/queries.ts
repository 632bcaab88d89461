// SQL for one grant/revoke (reference §1.4) and the list (§1.2). Every function takes the handle first, so it runs
// inside the command's transaction or on the pool.
import type { JSONValue } from "postgres";
import type { Db } from "../../shared/db.ts";
import { type ExpirySchedule, expiryUpsert } from "../expiry/schedule.ts";
import { type IdempotencyRecord, idempotencyUpsert, type Key } from "../idempotency/queries.ts";
import type { EntitlementStatus } from "./model.ts";

/** `version` is bigint, which postgres.js returns as a string; read as float8 it is a number, exact below 2^53. */
export type EntitlementRow = {
  user_id: string;
  stock_keeping_unit: string;
  status: EntitlementStatus;
  version: number;
  updated_at: Date;
};

export type EntitlementDetailRow = EntitlementRow & { expires_at: Date | null };

export type Change = {
  userId: string;
  sku: string;
  reason: string;
  purchaseId: string;
  now: Date;
  /** A grant's expiry; null (or absent) for none. A grant replaces the previous expiry, a revoke clears it. */
  expiresAt?: Date | null;
  /**
   * Change nothing when this caller's Idempotency-Key has a live record (a replay). It lets the upsert be pipelined
   * with the key's lock and lookup: as a later statement it sees whatever the lock's previous holder committed.
   */
  unlessKeyIsLive?: { caller: string; key: string };
};

/** `where not exists` a live idempotency record, or nothing; `now()` is the transaction's, as in the lookup. */
function keyGuard(db: Db, c: Pick<Change, "unlessKeyIsLive">) {
  const k = c.unlessKeyIsLive;
  return k
    ? db`where not exists (select 1 from idempotency_keys
           where caller = ${k.caller} and idem_key = ${k.key} and expires_at > now())`
    : db``;
}

/** Grants unless the row is already ACTIVE: a new row is v0, a REVOKED row goes to v+1. No row → already ACTIVE. */
export async function upsertGrantIfNotActive(db: Db, c: Change): Promise<EntitlementRow | undefined> {
  const [row] = await upsertGrantsIfNotActive(db, { ...c, skus: [c.sku] });
  return row;
}

/**
 * Grants every item of one user that is not ACTIVE (a new row is v0, a REVOKED row goes to v+1) and returns those
 * rows: a single grant and a bundle's items. The rows are inserted, and existing ones locked, in `order by sku`: two
 * bundles of one user that share items lock them in the same order, so one waits for the other instead of
 * deadlocking. An ACTIVE row stays locked though unchanged (ON CONFLICT locks the row before its WHERE), so a read
 * that follows in the transaction sees it as it stays until commit.
 */
export async function upsertGrantsIfNotActive(
  db: Db,
  c: Omit<Change, "sku"> & { skus: string[] },
): Promise<EntitlementRow[]> {
  return db<EntitlementRow[]>`
    insert into entitlements as e
      (user_id, stock_keeping_unit, status, granted_at, revoked_at, source, source_id, version, updated_at, expires_at)
    select ${c.userId}::text, sku, 'ACTIVE', ${c.now}::timestamptz, null::timestamptz, ${c.reason}::text,
           ${c.purchaseId}::text, 0, ${c.now}::timestamptz, ${c.expiresAt ?? null}::timestamptz
    from unnest(${c.skus}::text[]) as item(sku)
    ${keyGuard(db, c)}
    order by sku
    on conflict (user_id, stock_keeping_unit) do update set
      status = excluded.status,
      granted_at = excluded.granted_at,
      revoked_at = null,
      source = excluded.source,
      source_id = excluded.source_id,
      version = e.version + 1,
      updated_at = excluded.updated_at,
      expires_at = excluded.expires_at
    where e.status <> 'ACTIVE'
    returning user_id, stock_keeping_unit, status, version::float8 as version, updated_at`;
}

/**
 * Revokes unless the row is already REVOKED: granted_at is kept. A pair that was never granted becomes a REVOKED v0
 * row (granted_at null), as in the reference. No row → already REVOKED.
 */
export async function upsertRevokeIfNotRevoked(db: Db, c: Change): Promise<EntitlementRow | undefined> {
  const [row] = await db<EntitlementRow[]>`
    insert into entitlements as e
      (user_id, stock_keeping_unit, status, granted_at, revoked_at, source, source_id, version, updated_at)
    select ${c.userId}::text, ${c.sku}::text, 'REVOKED', null::timestamptz, ${c.now}::timestamptz, ${c.reason}::text,
           ${c.purchaseId}::text, 0, ${c.now}::timestamptz
    ${keyGuard(db, c)}
    on conflict (user_id, stock_keeping_unit) do update set
      status = excluded.status,
      granted_at = e.granted_at,
      revoked_at = excluded.revoked_at,
      source = excluded.source,
      source_id = excluded.source_id,
      version = e.version + 1,
      updated_at = excluded.updated_at,
      expires_at = null
    where e.status <> 'REVOKED'
    returning user_id, stock_keeping_unit, status, version::float8 as version, updated_at`;
  return row;
}

/**
 * Bounds every later statement of the transaction, waits on locks included, so a request never hangs on a stuck
 * database (SQLSTATE 57014 when exceeded).
 */
export async function limitStatementTime(db: Db, ms: number): Promise<void> {
  await db`select set_config('statement_timeout', ${String(ms)}, true)`;
}

export type AuditEntry = {
  userId: string;
  sku: string;
  action: "GRANT" | "REVOKE" | "EXPIRE" | "EXTEND";
  /** The entitlement's version after the change. */
  version: number;
  reason: string;
  purchaseId: string;
  /** The Idempotency-Key, as in the reference. */
  requestId: string;
  /** The token name of the caller; null when authentication is disabled. */
  caller: string | null;
  detail: JSONValue;
  traceId: string;
  occurredAt: Date;
};

export type OutboxEvent = {
  eventId: string;
  eventType: string;
  aggregateKey: string;
  payload: JSONValue;
  createdAt: Date;
  /** W3C trace context of the command's transaction; null when tracing is not installed. */
  traceparent: string | null;
};

/**
 * What an applied command commits besides the state change, in one statement: the audit row, the outbox event,
 * the expiry it schedules (a grant with expires_at) and the idempotency record (the outbox insert trigger wakes the relay after commit). Returns the idempotency rows written (1, or 0 when a live record was in the way). Three
 * statements cost three Bind/Execute exchanges and executor start-ups for nothing: they were already one round trip.
 */
export async function insertAppliedCommand(
  db: Db,
  r: { audit: AuditEntry; event: OutboxEvent; reply: Key & IdempotencyRecord; expiry?: ExpirySchedule },
): Promise<number> {
  const { audit: a, event: e } = r;
  const expiry = r.expiry ? db`, expiry as (${expiryUpsert(db, r.expiry)})` : db``;
  const [row] = await db<{ stored: number }[]>`
    with audit as (
      insert into entitlement_audit
        (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, source, source_id, request_id, caller,
         detail, trace_id)
      values (${crypto.randomUUID()}, ${a.occurredAt}, ${a.userId}, ${a.sku}, ${a.action}, ${a.version}, ${a.reason},
              ${a.purchaseId}, ${a.requestId}, ${a.caller}, ${db.json(a.detail)}, ${a.traceId})
    ), outbox as (
      insert into outbox_events
        (event_id, event_type, aggregate_key, payload, status, attempt_count, created_at, traceparent)
      values (${e.eventId}, ${e.eventType}, ${e.aggregateKey}, ${db.json(e.payload)}, 'PENDING', 0, ${e.createdAt},
              ${e.traceparent})
    )${expiry}, stored as (
      ${idempotencyUpsert(db, r.reply)}
      returning 1
    )
    select count(*)::int as stored from stored`;
  return row?.stored ?? 0;
}

/** The current state of one entitlement: a primary-key lookup on the pool, no transaction. */
export async function findEntitlement(
  db: Db,
  key: { userId: string; sku: string },
): Promise<EntitlementDetailRow | undefined> {
  const [row] = await db<EntitlementDetailRow[]>`
    select user_id, stock_keeping_unit, status, version::float8 as version, updated_at, expires_at
    from entitlements
    where user_id = ${key.userId} and stock_keeping_unit = ${key.sku}`;
  return row;
}

/** A listed row and its sort key: updated_at to the microsecond (a JS Date keeps milliseconds only). */
export type ListedRow = EntitlementDetailRow & { updated_key: string };

/**
 * One page of a user's entitlements, newest first, the SKU breaking ties; `after` is the previous page's last key.
 * Keyset paging on entitlements_user_updated_sku_idx: the redundant `updated_at <= t` bounds the index scan, the
 * rest of the predicate skips the ties already listed. Fetches `limit` rows (callers ask one more than they show).
 */
export async function listEntitlementsOfUser(
  db: Db,
  input: { userId: string; limit: number; after?: { updatedAt: string; sku: string } },
): Promise<ListedRow[]> {
  const a = input.after;
  // Sent as text: postgres.js would pass a timestamptz parameter through a JS Date, losing the microseconds.
  const after = a
    ? db`and updated_at <= ${a.updatedAt}::text::timestamptz
         and (updated_at < ${a.updatedAt}::text::timestamptz or stock_keeping_unit > ${a.sku})`
    : db``;
  return db<ListedRow[]>`
    select user_id, stock_keeping_unit, status, version::float8 as version, updated_at, expires_at,
           to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as updated_key
    from entitlements
    where user_id = ${input.userId} ${after}
    order by updated_at desc, stock_keeping_unit
    limit ${input.limit}`;
}
