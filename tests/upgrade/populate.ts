// A database of the previous release with rows in every table its write path fills, written by that release's own
// code (its services, its console's undo, its scheduler's and operator's calls): grants with and without expiry, a
// revoke, a re-grant, a refused grant, a bundle, an extension and a refused one, the console's undo of an extension,
// an expiry, and reservations reserved, cancelled, executed, failed, ended by the claim and requeued.
import type { Sql } from "../../src/shared/db.ts";
import { sha256Int64 } from "../../src/shared/ids.ts";
import { previousAnswer, type Request } from "./answers.ts";
import { previousRelease } from "./previous-release.ts";

const T0 = new Date("2026-03-01T10:00:00.000Z");
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const CONFLICT = { code: 409, body: { code: "ENTITLEMENT_STATE_CONFLICT", message: "refused" } };
const RESERVATION = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;

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

const item = (kind: "GRANT" | "REVOKE" | "EXTEND", user: string, sku: string, expiresAt?: Date): Request => ({
  kind,
  body: {
    user_id: user,
    stock_keeping_unit: sku,
    reason: "purchase",
    purchase_id: `order-${sku}`,
    ...(expiresAt ? { expires_at: expiresAt.toISOString() } : {}),
  },
});

/** The requests of the previous release's services, one a minute. */
const REQUESTS: Request[] = [
  item("GRANT", "u1", "sword"),
  item("GRANT", "u1", "shield", at(60 * 24)),
  item("REVOKE", "u1", "sword"),
  item("GRANT", "u1", "sword"),
  item("GRANT", "u1", "sword"),
  {
    kind: "BUNDLE",
    body: { user_id: "u2", stock_keeping_units: ["a", "b", "c"], reason: "bundle", purchase_id: "b-1" },
  },
  item("EXTEND", "u1", "shield", at(60 * 72)),
  item("EXTEND", "u1", "sword", at(60 * 72)),
  item("GRANT", "u3", "potion", at(30)),
  { kind: "RESERVE", body: { user_id: "u4", point_amount: 110, execute_at: at(11).toISOString() } },
  { kind: "RESERVE", body: { user_id: "u4", point_amount: 111, execute_at: at(12).toISOString(), reason: "campaign" } },
  { kind: "RESERVE", body: { user_id: "u4", point_amount: 112, execute_at: at(13).toISOString() } },
  { kind: "RESERVE", body: { user_id: "u4", point_amount: 113, execute_at: at(14).toISOString() } },
  { kind: "CANCEL", reservationId: RESERVATION(1) },
];

/** Writes the rows; returns nothing but what the tables hold. */
export async function populatePreviousRelease(sql: Sql): Promise<void> {
  for (const [i, request] of REQUESTS.entries()) {
    const minute = i + 1;
    const reservation = request.kind === "RESERVE" ? RESERVATION(minute - 9) : undefined;
    await previousAnswer(sql, request, `key-${minute}`, at(minute), reservation);
  }
  await previousRelease.undoExtension(sql, {
    userId: "u1",
    sku: "shield",
    reason: "undo",
    purchaseId: "order-shield",
    now: at(20),
    traceId: "trace-20",
    traceparent: null,
    payload: { event_type: "EntitlementExtended", occurred_at: at(20).toISOString(), user_id: "u1", source: "undo" },
    detail: { user_id: "u1", reason: "undo" },
    idempotency: keyed("key-20", at(20)),
    expiresAt: at(60 * 24),
    version: 2,
    applied: { code: 200, body: { user_id: "u1", stock_keeping_unit: "shield", status: "ACTIVE", version: 0 } },
    refused: { changed: CONFLICT, not_earlier: CONFLICT },
  });
  await sql`update entitlement_expiries set status = 'PROCESSING', locked_by = 'w1' where user_id = 'u3'`;
  const payload = {
    event_type: "EntitlementRevoked",
    occurred_at: at(40).toISOString(),
    user_id: "u3",
    source: "expiry",
  };
  const expiry = { userId: "u3", sku: "potion", reason: "expiry", now: at(40), traceId: "trace-40", traceparent: null };
  await previousRelease.expireEntitlement(sql, { ...expiry, payload, lockedBy: "w1" });
  await schedulePoints(sql);
}

/** The scheduler's claim, an execution, a failed attempt for good, a lease that ran out on its last attempt, a requeue. */
async function schedulePoints(sql: Sql): Promise<void> {
  const claimed = await previousRelease.claimDueReservations(sql, {
    now: at(30),
    leaseUntil: at(31),
    lockedBy: "w1",
    limit: 10,
    maxAttempts: 3,
  });
  if (claimed.length !== 3) throw new Error(`the claim took ${claimed.length} reservations, not 3`);
  await previousRelease.executeReservation(sql, {
    reservationId: RESERVATION(2),
    lockedBy: "w1",
    transactionId: "00000000-0000-4000-8000-0000000000a2",
    eventId: "00000000-0000-4000-8000-0000000000e2",
    now: at(30),
    subject: "points.events",
    payload: { event_type: "PointsGranted", user_id: "u4", point_amount: 111, reservation_id: RESERVATION(2) },
  });
  await previousRelease.failReservation(sql, {
    reservationId: RESERVATION(3),
    lockedBy: "w1",
    now: at(30),
    retryAt: null,
    lastError: "broker away",
  });
  await sql`update point_reservations set attempt_count = 3 where reservation_id = ${RESERVATION(4)}`;
  await previousRelease.claimDueReservations(sql, {
    now: at(32),
    leaseUntil: at(33),
    lockedBy: "w2",
    limit: 10,
    maxAttempts: 3,
  });
  await previousRelease.requeueReservations(sql, { reservationId: RESERVATION(3) });
}
