// SQL of a bundle grant, handle first. The upsert of every item, in one statement and a fixed lock order, is the
// grant's (entitlements/queries.ts upsertGrantsIfNotActive); here are the read of the unchanged items and what commits
// with the change (audit rows, outbox events, the idempotency record) in one more statement.
import type { JSONValue } from "postgres";
import type { Db } from "../../shared/db.ts";
import type { EntitlementRow } from "../entitlements/queries.ts";
import { expiryUpsert } from "../expiry/schedule.ts";
import { type IdempotencyRecord, idempotencyUpsert, type Key } from "../idempotency/queries.ts";

/** The current rows of some items of one user (the bundle's unchanged items, read under their locks). */
export async function findEntitlementsOfUser(
  db: Db,
  args: { userId: string; skus: string[] },
): Promise<EntitlementRow[]> {
  return db<EntitlementRow[]>`
    select user_id, stock_keeping_unit, status, version::float8 as version, updated_at
    from entitlements
    where user_id = ${args.userId} and stock_keeping_unit = any(${args.skus}::text[])`;
}

/** One changed item: its audit row and its outbox event. */
export type AppliedItem = {
  auditId: string;
  sku: string;
  version: number;
  detail: JSONValue;
  eventId: string;
  payload: JSONValue;
};

/**
 * The audit rows and outbox events of the changed items and the bundle's idempotency record, in one statement.
 * Arrays through unnest keep it one prepared statement whatever the bundle's size; JSON travels as text[] and is cast
 * per element (a jsonb[] parameter would store each document as a JSON string). Returns the idempotency rows
 * written (1, or 0 when a live record was in the way).
 */
export async function insertAppliedBundle(
  db: Db,
  r: {
    userId: string;
    reason: string;
    purchaseId: string;
    requestId: string;
    caller: string | null;
    traceId: string;
    /** W3C trace context of the request, for every event of the bundle (outbox-event.ts). */
    traceparent?: string | null;
    occurredAt: Date;
    items: AppliedItem[];
    reply: Key & IdempotencyRecord;
    /** Set when the bundle gives its items an expiry: scheduled for the changed items. */
    expiresAt: Date | null;
  },
): Promise<number> {
  const column = <K extends keyof AppliedItem>(key: K) => r.items.map((item) => item[key]);
  const json = (key: "detail" | "payload") => r.items.map((item) => JSON.stringify(item[key]));
  const [row] = await db<{ stored: number }[]>`
    with audit as (
      insert into entitlement_audit
        (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, source, source_id, request_id, caller,
         detail, trace_id)
      select a.id, ${r.occurredAt}, ${r.userId}, a.sku, 'GRANT', a.version, ${r.reason}, ${r.purchaseId},
             ${r.requestId}, ${r.caller}, a.detail::jsonb, ${r.traceId}
      from unnest(${column("auditId")}::uuid[], ${column("sku")}::text[], ${column("version")}::bigint[],
                  ${json("detail")}::text[]) as a(id, sku, version, detail)
    ), outbox as (
      insert into outbox_events
        (event_id, event_type, aggregate_key, payload, status, attempt_count, created_at, traceparent)
      select o.id, 'EntitlementGranted', ${r.userId} || ':' || o.sku, o.payload::jsonb, 'PENDING', 0, ${r.occurredAt},
             ${r.traceparent ?? null}
      from unnest(${column("eventId")}::uuid[], ${column("sku")}::text[], ${json("payload")}::text[])
        as o(id, sku, payload)
    )${
      r.expiresAt && r.items.length > 0
        ? db`, expiry as (${expiryUpsert(db, {
            userId: r.userId,
            skus: column("sku"),
            expiresAt: r.expiresAt,
            traceId: r.traceId,
            now: r.occurredAt,
          })})`
        : db``
    }, stored as (
      ${idempotencyUpsert(db, r.reply)}
      returning 1
    )
    select count(*)::int as stored from stored`;
  return row?.stored ?? 0;
}
