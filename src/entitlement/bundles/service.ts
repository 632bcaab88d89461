// A bundle grant (CONTRACT §3.1b): one transaction under one idempotency record, as a single grant is (the advisory
// lock on the key, the lookup, then a replay or the changes), granting every item that is not ACTIVE with its own
// audit row and outbox event. Expected outcomes are values; surprises are thrown.
import type { Sql, TransactionSql } from "postgres";
import type { Clock } from "../../shared/runtime.ts";
import { traceparentOf } from "../../shared/trace-context.ts";
import type { CommandMetrics } from "../entitlements/metrics.ts";
import { outboxEventOf } from "../entitlements/outbox-event.ts";
import { type EntitlementRow, upsertGrantsIfNotActive } from "../entitlements/queries.ts";
import { assertNotPast } from "../entitlements/validation.ts";
import { openCommand } from "../idempotency/open.ts";
import { assertStored, type ErrorReply, replayStored } from "../idempotency/replay.ts";
import { bundleRequestHash } from "./hash.ts";
import { type BundleBody, type BundleItem, BundleResponse } from "./model.ts";
import { type AppliedItem, findEntitlementsOfUser, insertAppliedBundle } from "./queries.ts";

export type BundleDeps = {
  sql: Sql;
  now: Clock;
  idempotencyTtlMs: number;
  statementTimeoutMs: number;
  metrics: CommandMetrics;
};

export type BundleCommand = { body: BundleBody; idempotencyKey: string; traceId: string; caller: string };

export type BundleReply = {
  kind: "applied" | "key_conflict" | "replayed";
  status: number;
  body: BundleResponse | ErrorReply;
};

const RESULT = { applied: "success", key_conflict: "conflict", replayed: "idempotency_reused" } as const;

/** Runs a bundle grant; throws only on database trouble (the transaction is then rolled back). */
export async function executeBundle(deps: BundleDeps, command: BundleCommand): Promise<BundleReply> {
  try {
    const reply = await deps.sql.begin((tx) => executeInTransaction(tx, deps, command));
    deps.metrics.record("BUNDLE_GRANT", RESULT[reply.kind]);
    return reply;
  } catch (error) {
    deps.metrics.record("BUNDLE_GRANT", "error");
    throw error;
  }
}

async function executeInTransaction(
  tx: TransactionSql,
  deps: BundleDeps,
  command: BundleCommand,
): Promise<BundleReply> {
  const { body, caller, idempotencyKey: key } = command;
  const now = deps.now();
  const change = {
    userId: body.user_id,
    skus: body.stock_keeping_units,
    reason: body.reason,
    purchaseId: body.purchase_id,
    now,
    expiresAt: body.expires_at === undefined ? null : new Date(body.expires_at),
    unlessKeyIsLive: { caller, key },
  };
  // Pipelined as a single grant's statements are (one round trip); the read runs after the upsert, so it sees the
  // unchanged items under the locks the upsert took.
  const [stored, changed, current] = await Promise.all([
    openCommand(tx, { caller, key, statementTimeoutMs: deps.statementTimeoutMs }),
    upsertGrantsIfNotActive(tx, change),
    findEntitlementsOfUser(tx, { userId: body.user_id, skus: body.stock_keeping_units }),
  ]);
  const hash = bundleRequestHash(body);
  if (stored) {
    if (changed.length > 0) throw new Error("idempotency invariant violated: a replayed key changed an entitlement");
    return replayStored<BundleResponse>(stored, hash, BundleResponse);
  }
  assertNotPast(body.expires_at, now);
  const response = bundleResponse(body, changed, current);
  const reply = { status: 200, body: response };
  assertStored(
    await insertAppliedBundle(tx, {
      userId: body.user_id,
      reason: body.reason,
      purchaseId: body.purchase_id,
      requestId: key,
      caller: caller === "" ? null : caller,
      traceId: command.traceId,
      traceparent: traceparentOf() ?? null,
      occurredAt: now,
      items: changed.map((row) => appliedItem(row, command, now)),
      expiresAt: change.expiresAt,
      reply: {
        caller,
        key,
        requestHash: hash,
        responseCode: 200,
        responseBody: response,
        expiresAt: new Date(now.getTime() + deps.idempotencyTtlMs),
      },
    }),
  );
  return { kind: "applied", ...reply };
}

/** Every item in request order: the changed rows as the upsert returned them, the others as they are. */
function bundleResponse(body: BundleBody, changed: EntitlementRow[], current: EntitlementRow[]): BundleResponse {
  const changedBySku = new Map(changed.map((row) => [row.stock_keeping_unit, row]));
  const currentBySku = new Map(current.map((row) => [row.stock_keeping_unit, row]));
  const items = body.stock_keeping_units.map((sku): BundleItem => {
    const row = changedBySku.get(sku) ?? currentBySku.get(sku);
    if (!row) throw new Error(`bundle item ${sku} has no row after its upsert`);
    return {
      stock_keeping_unit: sku,
      status: row.status,
      version: row.version,
      updated_at: row.updated_at.toISOString(),
      changed: changedBySku.has(sku),
    };
  });
  return { user_id: body.user_id, items };
}

function appliedItem(row: EntitlementRow, command: BundleCommand, now: Date): AppliedItem {
  const { body } = command;
  const item = {
    user_id: body.user_id,
    stock_keeping_unit: row.stock_keeping_unit,
    reason: body.reason,
    purchase_id: body.purchase_id,
  };
  const event = outboxEventOf("GRANT", row, item, command.traceId, now);
  return {
    auditId: crypto.randomUUID(),
    sku: row.stock_keeping_unit,
    version: row.version,
    detail: { ...item, bundle_size: body.stock_keeping_units.length },
    eventId: event.eventId,
    payload: event.payload,
  };
}
