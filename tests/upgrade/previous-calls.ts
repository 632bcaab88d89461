// The previous release's write path (640b121, src/entitlement/write/): the SQL each call sends, as it sends it (the
// arguments by name or by position, their casts), frozen here so that a change of src/ cannot change what stands for
// replicas that are already deployed.
import type { JSONValue } from "postgres";
import type { Db } from "../../src/shared/db.ts";

export type PreviousKey = {
  caller: string;
  key: string;
  lockKey: bigint;
  requestHash: string;
  recordExpiresAt: Date;
  lockTimeoutMs: number;
};

export type PreviousOutcome = {
  outcome: string;
  storedHash: string | null;
  replyCode: number | null;
  replyBody: unknown;
  replyExpiresAt: Date | null;
};

export type StoredReply = { code: number; body: JSONValue };

const EVENT_TYPE = {
  GRANT: "EntitlementGranted",
  REVOKE: "EntitlementRevoked",
  EXTEND: "EntitlementExtended",
  EXPIRE: "EntitlementRevoked",
};
type ChangeAction = keyof typeof EVENT_TYPE;

export type PreviousChangeFields = {
  userId: string;
  reason: string;
  now: Date;
  traceId: string;
  traceparent: string | null;
  payload: JSONValue;
};

export type PreviousKeyedChange = PreviousChangeFields & {
  purchaseId: string;
  detail: JSONValue;
  idempotency: PreviousKey;
};

const idempotencyParams = (db: Db, k: PreviousKey | null) => db`
    p_caller => ${k?.caller ?? null}::text,
    p_idem_key => ${k?.key ?? null}::text,
    p_lock_key => ${k?.lockKey.toString() ?? null}::bigint,
    p_request_hash => ${k?.requestHash ?? null}::text,
    p_record_expires_at => ${k?.recordExpiresAt ?? null}::timestamptz,
    p_lock_timeout_ms => ${k?.lockTimeoutMs ?? null}::int`;

const OUTCOME_COLUMNS = (db: Db) => db`
  outcome, stored_hash as "storedHash", reply_code as "replyCode", reply_body as "replyBody",
  reply_expires_at as "replyExpiresAt"`;

const changeParams = (db: Db, action: ChangeAction, c: PreviousChangeFields) => db`
  p_user_id => ${c.userId}::text,
  p_reason => ${c.reason}::text,
  p_now => ${c.now}::timestamptz,
  p_trace_id => ${c.traceId}::text,
  p_traceparent => ${c.traceparent}::text,
  p_event_type => ${EVENT_TYPE[action]}::text,
  p_payload => ${db.json(c.payload)}::jsonb`;

const keyedChangeParams = (db: Db, action: ChangeAction, c: PreviousKeyedChange) => db`
  ${changeParams(db, action, c)},
  p_purchase_id => ${c.purchaseId}::text,
  p_detail => ${db.json(c.detail)}::jsonb,
  ${idempotencyParams(db, c.idempotency)}`;

async function one(query: Promise<PreviousOutcome[]>, name: string): Promise<PreviousOutcome> {
  const [row] = await query;
  if (!row) throw new Error(`${name} returned no row`);
  return row;
}

export type PreviousGrant = PreviousKeyedChange & {
  skus: string[];
  expiresAt: Date | null;
  applied: StoredReply;
  refused: StoredReply | null;
};

export const previousGrant = (db: Db, g: PreviousGrant) =>
  one(
    db<PreviousOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_grant(
      ${keyedChangeParams(db, "GRANT", g)},
      p_skus => ${g.skus}::text[],
      p_expires_at => ${g.expiresAt}::timestamptz,
      p_applied => ${db.json(g.applied)}::jsonb,
      p_refused => ${g.refused === null ? null : db.json(g.refused)}::jsonb)`,
    "entitlement_grant",
  );

export type PreviousRevoke = PreviousKeyedChange & { sku: string; applied: StoredReply; refused: StoredReply };

export const previousRevoke = (db: Db, r: PreviousRevoke) =>
  one(
    db<PreviousOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_revoke(
      ${keyedChangeParams(db, "REVOKE", r)},
      p_sku => ${r.sku}::text,
      p_applied => ${db.json(r.applied)}::jsonb,
      p_refused => ${db.json(r.refused)}::jsonb)`,
    "entitlement_revoke",
  );

export type PreviousExtension = PreviousKeyedChange & {
  sku: string;
  expiresAt: Date;
  applied: StoredReply;
  refused: { not_active: StoredReply; no_expiry: StoredReply; not_later: StoredReply };
};

export const previousExtend = (db: Db, x: PreviousExtension) =>
  one(
    db<PreviousOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_extend(
      ${keyedChangeParams(db, "EXTEND", x)},
      p_sku => ${x.sku}::text,
      p_expires_at => ${x.expiresAt}::timestamptz,
      p_applied => ${db.json(x.applied)}::jsonb,
      p_refused => ${db.json(x.refused)}::jsonb)`,
    "entitlement_extend",
  );

export type PreviousExtensionUndo = PreviousKeyedChange & {
  sku: string;
  expiresAt: Date;
  version: number;
  applied: StoredReply;
  refused: { changed: StoredReply; not_earlier: StoredReply };
};

export const previousExtendUndo = (db: Db, x: PreviousExtensionUndo) =>
  one(
    db<PreviousOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_extend_undo(
      ${keyedChangeParams(db, "EXTEND", x)},
      p_sku => ${x.sku}::text,
      p_expires_at => ${x.expiresAt}::timestamptz,
      p_version => ${x.version}::bigint,
      p_applied => ${db.json(x.applied)}::jsonb,
      p_refused => ${db.json(x.refused)}::jsonb)`,
    "entitlement_extend_undo",
  );

/** The scheduler's expiry of one claimed item: `applied`, `unchanged` or `lost`. */
export async function previousExpire(
  db: Db,
  x: PreviousChangeFields & { sku: string; lockedBy: string },
): Promise<string> {
  const [row] = await db<{ outcome: string }[]>`
    select entitlement_expire(
      ${changeParams(db, "EXPIRE", x)},
      p_sku => ${x.sku}::text,
      p_locked_by => ${x.lockedBy}::text) as outcome`;
  if (!row) throw new Error("entitlement_expire returned no row");
  return row.outcome;
}

export type PreviousReservation = {
  reservationId: string;
  userId: string;
  pointAmount: number;
  executeAt: Date;
  reason: string | null;
  now: Date;
  traceId: string;
  idempotency: PreviousKey;
  applied: StoredReply;
  refused: StoredReply;
};

export const previousReserve = (db: Db, r: PreviousReservation) =>
  one(
    db<PreviousOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from point_reserve(
      p_reservation_id => ${r.reservationId}::uuid,
      p_user_id => ${r.userId}::text,
      p_point_amount => ${r.pointAmount}::bigint,
      p_execute_at => ${r.executeAt}::timestamptz,
      p_reason => ${r.reason}::text,
      p_now => ${r.now}::timestamptz,
      p_trace_id => ${r.traceId}::text,
      p_applied => ${db.json(r.applied)}::jsonb,
      p_refused => ${db.json(r.refused)}::jsonb,
      ${idempotencyParams(db, r.idempotency)})`,
    "point_reserve",
  );

export type PreviousCancellation = {
  reservationId: string;
  now: Date;
  traceId: string;
  idempotency: PreviousKey;
  applied: StoredReply;
  refused: StoredReply;
};

export const previousCancel = (db: Db, c: PreviousCancellation) =>
  one(
    db<PreviousOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from point_cancel(
      p_reservation_id => ${c.reservationId}::uuid,
      p_now => ${c.now}::timestamptz,
      p_trace_id => ${c.traceId}::text,
      p_applied => ${db.json(c.applied)}::jsonb,
      p_refused => ${db.json(c.refused)}::jsonb,
      ${idempotencyParams(db, c.idempotency)})`,
    "point_cancel",
  );
