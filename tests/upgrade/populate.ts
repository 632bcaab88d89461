// A database of the previous release with rows in every table its write path fills, written by that release's own
// calls: grants with and without expiry, a revoke, a re-grant, a bundle, an extension, refusals, an expiry, and
// reservations reserved, cancelled, executed and failed.
import type { Sql } from "../../src/shared/db.ts";
import { sha256Int64 } from "../../src/shared/ids.ts";
import {
  type PreviousChange,
  previousChange,
  previousFailReservation,
  previousPointCommand,
  previousPointExecute,
} from "./previous-release.ts";

const T0 = new Date("2026-03-01T10:00:00.000Z");
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const EVENT = { GRANT: "EntitlementGranted", REVOKE: "EntitlementRevoked", EXTEND: "EntitlementExtended" };

function keyed(key: string, now: Date) {
  return {
    caller: "shop",
    key,
    lockKey: sha256Int64(key),
    requestHash: `hash-${key}`,
    recordExpiresAt: new Date(now.getTime() + 86_400_000),
    lockTimeoutMs: 5_000,
  };
}

function change(
  action: "GRANT" | "REVOKE" | "EXTEND",
  userId: string,
  skus: string[],
  minute: number,
  expiresAt: Date | null = null,
): PreviousChange {
  const now = at(minute);
  const reply = { user_id: userId, stock_keeping_unit: skus[0], status: action === "REVOKE" ? "REVOKED" : "ACTIVE" };
  return {
    action,
    userId,
    skus,
    bundle: skus.length > 1,
    reason: "purchase",
    purchaseId: `order-${minute}`,
    expiresAt,
    now,
    traceId: `trace-${minute}`,
    traceparent: null,
    eventType: EVENT[action],
    payload: { event_type: EVENT[action], occurred_at: now.toISOString(), user_id: userId, source: "purchase" },
    detail: { user_id: userId, reason: "purchase" },
    reply: skus.length > 1 ? null : { ...reply, version: 0, updated_at: now.toISOString() },
    idempotency: keyed(`key-${minute}`, now),
  };
}

/** Writes the rows; returns nothing but what the tables hold. */
export async function populatePreviousRelease(sql: Sql): Promise<void> {
  await previousChange(sql, change("GRANT", "u1", ["sword"], 1));
  await previousChange(sql, change("GRANT", "u1", ["shield"], 2, at(60 * 24)));
  await previousChange(sql, change("REVOKE", "u1", ["sword"], 3));
  await previousChange(sql, change("GRANT", "u1", ["sword"], 4));
  await previousChange(sql, change("GRANT", "u1", ["sword"], 5));
  await previousChange(sql, change("GRANT", "u2", ["a", "b", "c"], 6, at(60 * 48)));
  await previousChange(sql, change("EXTEND", "u1", ["shield"], 7, at(60 * 72)));
  await previousChange(sql, change("EXTEND", "u1", ["sword"], 8, at(60 * 72)));
  await previousChange(sql, change("GRANT", "u3", ["potion"], 9, at(30)));
  await sql`update entitlement_expiries set status = 'PROCESSING', locked_by = 'w1' where user_id = 'u3'`;
  await previousChange(sql, {
    ...change("REVOKE", "u3", ["potion"], 40),
    action: "EXPIRE",
    reason: "expiry",
    purchaseId: null,
    reply: null,
    detail: {},
    idempotency: null,
    lockedBy: "w1",
  });
  const reserve = (id: string, minute: number) =>
    previousPointCommand(sql, {
      action: "RESERVE",
      reservationId: id,
      userId: "u4",
      pointAmount: 100 + minute,
      executeAt: at(minute + 1),
      reason: minute % 2 ? "campaign" : null,
      now: at(minute),
      traceId: `trace-${minute}`,
      idempotency: keyed(`points-${minute}`, at(minute)),
    });
  await reserve("00000000-0000-4000-8000-000000000001", 10);
  await reserve("00000000-0000-4000-8000-000000000002", 11);
  await reserve("00000000-0000-4000-8000-000000000003", 12);
  await previousPointCommand(sql, {
    action: "CANCEL",
    reservationId: "00000000-0000-4000-8000-000000000001",
    now: at(13),
    traceId: "trace-13",
    idempotency: keyed("points-13", at(13)),
  });
  await sql`update point_reservations set status = 'PROCESSING', locked_by = 'w1'
            where reservation_id in ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003')`;
  await previousPointExecute(sql, {
    reservationId: "00000000-0000-4000-8000-000000000002",
    lockedBy: "w1",
    transactionId: "00000000-0000-4000-8000-0000000000a2",
    eventId: "00000000-0000-4000-8000-0000000000e2",
    now: at(20),
    payload: { user_id: "u4", reservation_id: "00000000-0000-4000-8000-000000000002" },
  });
  await previousFailReservation(sql, {
    reservationId: "00000000-0000-4000-8000-000000000003",
    lockedBy: "w1",
    now: at(21),
    lastError: "broker away",
  });
}
