// What the previous release's services (640b121, src/entitlement/features/) pass for one request, and the answer its
// reply logic (write/run.ts replyOf, write/idempotency/replay.ts) makes of what the call returned, frozen: the reply
// templates it stores under a key are what the other release must replay byte for byte.
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { Db } from "../../src/shared/db.ts";
import {
  type PreviousKey,
  type PreviousOutcome,
  previousCancel,
  previousExtend,
  previousGrant,
  previousReserve,
  previousRevoke,
  type StoredReply,
} from "./previous-calls.ts";
import type { PreviousBundleBody } from "./previous-hash.ts";

type EntitlementBody = {
  user_id: string;
  stock_keeping_unit: string;
  reason: string;
  purchase_id: string;
  expires_at?: string;
};

/** One request as the previous release's routes hand it to its services. */
export type PreviousRequest =
  | { kind: "GRANT" | "REVOKE" | "EXTEND"; body: EntitlementBody }
  | { kind: "BUNDLE"; body: PreviousBundleBody }
  | { kind: "RESERVE"; body: { user_id: string; point_amount: number; execute_at: string; reason?: string } }
  | { kind: "CANCEL"; reservationId: string };

const stateConflict = (message: string): StoredReply => ({
  code: 409,
  body: { code: "ENTITLEMENT_STATE_CONFLICT", message },
});
const ok = (body: StoredReply["body"]): StoredReply => ({ code: 200, body });
const ALREADY_ACTIVE = stateConflict("already ACTIVE");
const ALREADY_REVOKED = stateConflict("already REVOKED");
const EXTENSION_REFUSED = {
  not_active: stateConflict("not ACTIVE"),
  no_expiry: stateConflict("the entitlement has no expiry to extend"),
  not_later: stateConflict("expires_at must be later than the current one ({expires_at})"),
};
const BALANCE_LIMIT: StoredReply = {
  code: 409,
  body: {
    code: "POINTS_BALANCE_LIMIT",
    message: `the balance may not exceed ${Number.MAX_SAFE_INTEGER} points; it is {balance}`,
  },
};
const NOT_PENDING: StoredReply = {
  code: 409,
  body: {
    code: "RESERVATION_STATE_CONFLICT",
    message: "reservation is {status}; only a PENDING reservation can be cancelled",
  },
};

const EVENT_TYPE = { GRANT: "EntitlementGranted", REVOKE: "EntitlementRevoked", EXTEND: "EntitlementExtended" };

function eventPayload(
  action: keyof typeof EVENT_TYPE,
  body: EntitlementBody | PreviousBundleBody,
  traceId: string,
  now: Date,
) {
  return {
    event_type: EVENT_TYPE[action],
    occurred_at: now.toISOString(),
    user_id: body.user_id,
    source: body.reason,
    trace_id: traceId,
    ...(body.expires_at === undefined ? {} : { expires_at: body.expires_at }),
  };
}

type Context = { now: Date; traceId: string; idempotency: PreviousKey };

function entitlementCall(db: Db, kind: "GRANT" | "REVOKE" | "EXTEND", body: EntitlementBody, c: Context) {
  const change = {
    ...c,
    traceparent: null,
    userId: body.user_id,
    reason: body.reason,
    purchaseId: body.purchase_id,
    payload: eventPayload(kind, body, c.traceId, c.now),
    detail: { ...body },
  };
  const expiresAt = body.expires_at === undefined ? null : new Date(body.expires_at);
  const reply = {
    user_id: body.user_id,
    stock_keeping_unit: body.stock_keeping_unit,
    status: kind === "REVOKE" ? "REVOKED" : "ACTIVE",
    version: 0,
    updated_at: c.now.toISOString(),
    ...(expiresAt === null ? {} : { expires_at: expiresAt.toISOString() }),
  };
  const sku = body.stock_keeping_unit;
  if (kind === "GRANT") {
    return previousGrant(db, { ...change, skus: [sku], expiresAt, applied: ok(reply), refused: ALREADY_ACTIVE });
  }
  if (kind === "REVOKE") return previousRevoke(db, { ...change, sku, applied: ok(reply), refused: ALREADY_REVOKED });
  const until = expiresAt as Date;
  return previousExtend(db, { ...change, sku, expiresAt: until, applied: ok(reply), refused: EXTENSION_REFUSED });
}

function bundleCall(db: Db, body: PreviousBundleBody, c: Context) {
  return previousGrant(db, {
    ...c,
    traceparent: null,
    userId: body.user_id,
    skus: body.stock_keeping_units,
    reason: body.reason,
    purchaseId: body.purchase_id,
    expiresAt: body.expires_at === undefined ? null : new Date(body.expires_at),
    payload: eventPayload("GRANT", body, c.traceId, c.now),
    detail: {
      user_id: body.user_id,
      reason: body.reason,
      purchase_id: body.purchase_id,
      bundle_size: body.stock_keeping_units.length,
    },
    applied: ok({
      user_id: body.user_id,
      items: body.stock_keeping_units.map((sku) => ({ stock_keeping_unit: sku, status: "ACTIVE" })),
    }),
    refused: null,
  });
}

function reserveCall(db: Db, body: Extract<PreviousRequest, { kind: "RESERVE" }>["body"], id: string, c: Context) {
  const requested = new Date(body.execute_at);
  const executeAt = requested.getTime() < c.now.getTime() ? c.now : requested;
  const reservation = { reservationId: id, userId: body.user_id, pointAmount: body.point_amount, executeAt };
  const reason = body.reason ?? null;
  const now = c.now.toISOString();
  const applied = {
    code: 201,
    body: {
      reservation_id: id,
      user_id: body.user_id,
      point_amount: body.point_amount,
      execute_at: executeAt.toISOString(),
      reason,
      status: "PENDING",
      created_at: now,
      updated_at: now,
    },
  };
  return previousReserve(db, { ...reservation, ...c, reason, applied, refused: BALANCE_LIMIT });
}

/** The one call the previous release made for `request` under `key` at `now`; `reservationId` is the new one's id. */
export function previousCall(
  db: Db,
  request: PreviousRequest,
  key: PreviousKey,
  now: Date,
  traceId: string,
  reservationId: string = crypto.randomUUID(),
): Promise<PreviousOutcome> {
  const c = { now, traceId, idempotency: key };
  if (request.kind === "BUNDLE") return bundleCall(db, request.body, c);
  if (request.kind === "RESERVE") return reserveCall(db, request.body, reservationId, c);
  if (request.kind === "CANCEL") {
    const applied = {
      code: 200,
      body: { reservation_id: request.reservationId, status: "CANCELLED", updated_at: now.toISOString() },
    };
    return previousCancel(db, { ...c, reservationId: request.reservationId, applied, refused: NOT_PENDING });
  }
  return entitlementCall(db, request.kind, request.body, c);
}

export type PreviousReply = { kind: string; status: number; body: unknown };

/** The previous release's reply to what its call returned: the stored reply replayed, or the one the call stored. */
export function previousReply(result: PreviousOutcome, hash: string, ok: TSchema): PreviousReply {
  const { replyCode: code, replyBody: body } = result;
  if (result.outcome === "stored") {
    if (result.storedHash === null || code === null || result.replyExpiresAt === null) {
      throw new Error("a stored idempotency record without its hash, code or expiry");
    }
    if (result.storedHash !== hash) {
      return {
        kind: "key_conflict",
        status: 409,
        body: { code: "IDEMPOTENCY_KEY_CONFLICT", message: "Idempotency-Key conflict" },
      };
    }
    const error = body as { code?: unknown; message?: unknown } | null;
    const isError = typeof error?.code === "string" && typeof error.message === "string";
    if (!((code < 300 && Value.Check(ok, body)) || (code === 409 && isError))) {
      throw new Error(`stored idempotency response (code ${code}) cannot be replayed`);
    }
    return { kind: "replayed", status: code, body };
  }
  if (code === null) throw new Error(`command outcome ${result.outcome} has no reply`);
  if (result.outcome === "state_conflict" || result.outcome === "applied") {
    return { kind: result.outcome, status: code, body };
  }
  throw new Error(`unexpected command outcome ${result.outcome}`);
}
