// The previous release as its replicas meet this release's schema during a rolling upgrade: the text of the
// migrations this release rewrote, as that release shipped them, and the SQL its write path sends, as it sends it.
// Nothing here may follow later changes of src/: it stands for code that is already deployed.
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { migrations } from "../../src/entitlement/migrations.ts";
import type { Db } from "../../src/shared/db.ts";
import type { Migration } from "../../src/shared/migrate.ts";
import m013 from "./previous-release/013_one_write_path.sql" with { type: "text" };
import m016 from "./previous-release/016_point_execute.sql" with { type: "text" };

const REWRITTEN: Record<number, string> = { 13: m013, 16: m016 };

/** The previous release's numbered migrations, 001–016, with their texts as it shipped them (it had no functions). */
export const previousMigrations: Migration[] = migrations
  .filter((m) => m.version <= 16)
  .map((m) => (REWRITTEN[m.version] ? { ...m, sql: REWRITTEN[m.version] as string } : m));

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

export type PreviousChange = {
  action: "GRANT" | "REVOKE" | "EXTEND" | "EXPIRE";
  userId: string;
  skus: string[];
  bundle: boolean;
  reason: string;
  purchaseId: string | null;
  expiresAt: Date | null;
  now: Date;
  traceId: string;
  traceparent: string | null;
  eventType: string;
  payload: unknown;
  detail: unknown;
  reply: unknown;
  idempotency: PreviousKey | null;
  lockedBy?: string;
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

/** The previous release's one call for every change of entitlements. */
export async function previousChange(db: Db, c: PreviousChange): Promise<PreviousOutcome> {
  const json = (value: unknown) => db.json(value as Parameters<typeof db.json>[0]);
  const [row] = await db<PreviousOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from entitlement_change(
      p_action => ${c.action}::text,
      p_user_id => ${c.userId}::text,
      p_skus => ${c.skus}::text[],
      p_bundle => ${c.bundle}::boolean,
      p_reason => ${c.reason}::text,
      p_purchase_id => ${c.purchaseId}::text,
      p_expires_at => ${c.expiresAt}::timestamptz,
      p_now => ${c.now}::timestamptz,
      p_trace_id => ${c.traceId}::text,
      p_traceparent => ${c.traceparent}::text,
      p_event_type => ${c.eventType}::text,
      p_payload => ${json(c.payload)}::jsonb,
      p_detail => ${json(c.detail)}::jsonb,
      p_reply => ${c.reply === null ? null : json(c.reply)}::jsonb,
      ${idempotencyParams(db, c.idempotency)},
      p_locked_by => ${c.lockedBy ?? null}::text)`;
  if (!row) throw new Error("entitlement_change returned no row");
  return row;
}

export type PreviousPointCommand = {
  action: "RESERVE" | "CANCEL";
  reservationId: string;
  userId?: string;
  pointAmount?: number;
  executeAt?: Date;
  reason?: string | null;
  now: Date;
  traceId: string;
  idempotency: PreviousKey;
};

/** The previous release's one call for every points command. */
export async function previousPointCommand(db: Db, c: PreviousPointCommand): Promise<PreviousOutcome> {
  const [row] = await db<PreviousOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from point_command(
      p_action => ${c.action}::text,
      p_reservation_id => ${c.reservationId}::uuid,
      p_user_id => ${c.userId ?? null}::text,
      p_point_amount => ${c.pointAmount ?? null}::bigint,
      p_execute_at => ${c.executeAt ?? null}::timestamptz,
      p_reason => ${c.reason ?? null}::text,
      p_now => ${c.now}::timestamptz,
      p_trace_id => ${c.traceId}::text,
      ${idempotencyParams(db, c.idempotency)})`;
  if (!row) throw new Error("point_command returned no row");
  return row;
}

/** The previous release's execution of a claimed reservation (positional arguments, as it sends them). */
export async function previousPointExecute(
  db: Db,
  e: { reservationId: string; lockedBy: string; transactionId: string; eventId: string; now: Date; payload: object },
): Promise<{ finalized: number; granted: number; balance_after: number | null }> {
  const [row] = await db<{ finalized: number; granted: number; balance_after: number | null }[]>`
    select finalized, granted, balance_after::float8 as balance_after
    from point_execute(${e.reservationId}, ${e.lockedBy}, ${e.transactionId}, ${e.eventId}, ${e.now},
                       'points.events', ${db.json(e.payload as Record<string, string>)}::jsonb)`;
  if (!row) throw new Error("point_execute returned no row");
  return row;
}

/** The previous release's failed attempt of a claimed reservation, which wrote its audit row itself. */
export async function previousFailReservation(
  db: Db,
  args: { reservationId: string; lockedBy: string; now: Date; lastError: string },
): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    with failed as (
      update point_reservations
      set status = 'FAILED', due_at = greatest(execute_at, due_at),
          last_error = ${args.lastError}, locked_by = null, locked_at = null, updated_at = ${args.now}
      where reservation_id = ${args.reservationId} and locked_by = ${args.lockedBy} and status = 'PROCESSING'
      returning reservation_id, user_id, status
    ), audit as (
      insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, detail)
      select gen_random_uuid(), ${args.now}, reservation_id, user_id, 'FAIL',
             jsonb_build_object('last_error', ${args.lastError}::text)
      from failed where status = 'FAILED'
    )
    select count(*)::int as n from failed`;
  return row?.n ?? 0;
}

/** The previous release's request-level calls: what its services passed for one request at `now`. */
export type PreviousRequest =
  | {
      kind: "GRANT" | "REVOKE" | "EXTEND";
      body: { user_id: string; stock_keeping_unit: string; reason: string; purchase_id: string; expires_at?: string };
    }
  | {
      kind: "BUNDLE";
      body: {
        user_id: string;
        stock_keeping_units: string[];
        reason: string;
        purchase_id: string;
        expires_at?: string;
      };
    };

const EVENT_TYPE = { GRANT: "EntitlementGranted", REVOKE: "EntitlementRevoked", EXTEND: "EntitlementExtended" };

/** One entitlement command as the previous release's services made its call, under `key` with `hash`. */
export function previousCommand(
  db: Db,
  request: PreviousRequest,
  key: PreviousKey,
  now: Date,
  traceId: string,
): Promise<PreviousOutcome> {
  const action = request.kind === "BUNDLE" ? "GRANT" : request.kind;
  const { body } = request;
  const expiresAt = body.expires_at === undefined ? null : new Date(body.expires_at);
  const payload = {
    event_type: EVENT_TYPE[action],
    occurred_at: now.toISOString(),
    user_id: body.user_id,
    source: body.reason,
    trace_id: traceId,
    ...(body.expires_at === undefined ? {} : { expires_at: body.expires_at }),
  };
  const common = {
    action,
    userId: body.user_id,
    reason: body.reason,
    purchaseId: body.purchase_id,
    expiresAt,
    now,
    traceId,
    traceparent: null,
    eventType: EVENT_TYPE[action],
    payload,
    idempotency: key,
  } as const;
  if (request.kind === "BUNDLE") {
    const { user_id, reason, purchase_id } = request.body;
    const detail = { user_id, reason, purchase_id, bundle_size: request.body.stock_keeping_units.length };
    return previousChange(db, { ...common, skus: request.body.stock_keeping_units, bundle: true, detail, reply: null });
  }
  const sku = request.body.stock_keeping_unit;
  const status = request.kind === "REVOKE" ? "REVOKED" : "ACTIVE";
  const reply = {
    user_id: body.user_id,
    stock_keeping_unit: sku,
    status,
    version: 0,
    updated_at: now.toISOString(),
    ...(expiresAt === null ? {} : { expires_at: expiresAt.toISOString() }),
  };
  return previousChange(db, { ...common, skus: [sku], bundle: false, detail: { ...request.body }, reply });
}

/** The previous release's claim of due reservations, which wrote the audit row of an exhausted one itself. */
export async function previousClaim(
  db: Db,
  args: { now: Date; leaseUntil: Date; lockedBy: string; limit: number; maxAttempts: number },
): Promise<unknown[]> {
  const { now, maxAttempts } = args;
  const rows = await db<Record<string, unknown>[]>`
    with due as materialized (
      select reservation_id, status = 'PROCESSING' and attempt_count >= ${maxAttempts} as exhausted
      from point_reservations
      where status in ('PENDING', 'PROCESSING') and due_at <= ${now} and execute_at <= ${now}
      order by due_at limit ${args.limit}
      for update skip locked
    ), claimed as (
      update point_reservations r
      set status = case when due.exhausted then 'FAILED' else 'PROCESSING' end,
          attempt_count = case when due.exhausted then r.attempt_count else r.attempt_count + 1 end,
          locked_by = case when due.exhausted then null else ${args.lockedBy} end,
          locked_at = case when due.exhausted then null else ${now}::timestamptz end,
          due_at = case when due.exhausted then r.due_at else ${args.leaseUntil}::timestamptz end,
          last_error = case when due.exhausted
            then 'lease expired on attempt ' || r.attempt_count || ': the scheduler stopped before finalizing'
            else r.last_error end,
          updated_at = ${now}
      from due
      where r.reservation_id = due.reservation_id
      returning r.reservation_id, r.user_id, r.point_amount::float8 as point_amount, r.execute_at, r.reason,
                r.trace_id, r.attempt_count, r.status, r.last_error
    ), audit as (
      insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, detail)
      select gen_random_uuid(), ${now}, reservation_id, user_id, 'FAIL', jsonb_build_object('last_error', last_error)
      from claimed where status = 'FAILED'
    )
    select reservation_id, user_id, point_amount, execute_at, reason, trace_id, attempt_count, status
    from claimed order by execute_at, reservation_id`;
  return rows.map((r) => ({
    reservationId: r.reservation_id,
    userId: r.user_id,
    pointAmount: r.point_amount,
    executeAt: r.execute_at,
    reason: r.reason,
    traceId: r.trace_id,
    attemptCount: r.attempt_count,
    status: r.status,
  }));
}

/** The previous release's reply to what its call returned: the stored reply replayed, or the one the call stored. */
export function previousReply(result: PreviousOutcome, hash: string, ok: TSchema) {
  const { replyCode: code, replyBody: body } = result;
  if (result.outcome === "stored") {
    if (result.storedHash !== hash) {
      return {
        kind: "key_conflict",
        status: 409,
        body: { code: "IDEMPOTENCY_KEY_CONFLICT", message: "Idempotency-Key conflict" },
      };
    }
    const error = body as { code?: unknown; message?: unknown } | null;
    const isError = typeof error?.code === "string" && typeof error.message === "string";
    if (code === null || !((code < 300 && Value.Check(ok, body)) || (code === 409 && isError))) {
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
