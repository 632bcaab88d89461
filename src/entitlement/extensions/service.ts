// An extension (CONTRACT §3.1b): one transaction under one idempotency record, as a grant is. An ACTIVE entitlement
// gets the later expires_at (version + 1, audit EXTEND, event EntitlementExtended) and its expiry is rescheduled;
// anything else is a 409 that is remembered under the key like a grant's.
import type { TransactionSql } from "postgres";
import { checkEntitlement } from "../entitlements/check.ts";
import { toEntitlementDetail } from "../entitlements/detail.ts";
import type { EntitlementDetail } from "../entitlements/model.ts";
import { EntitlementDetail as DetailSchema } from "../entitlements/model.ts";
import { outboxEventOf } from "../entitlements/outbox-event.ts";
import { insertAppliedCommand } from "../entitlements/queries.ts";
import type { CommandDeps } from "../entitlements/service.ts";
import { assertNotPast } from "../entitlements/validation.ts";
import { lockExpiry } from "../expiry/schedule.ts";
import { requestHash } from "../idempotency/hash.ts";
import { openCommand } from "../idempotency/open.ts";
import { storeIdempotencyRecord } from "../idempotency/queries.ts";
import { assertStored, type ErrorReply, replayStored } from "../idempotency/replay.ts";
import type { ExtensionBody } from "./model.ts";
import { extendIfLater } from "./queries.ts";

export type ExtensionCommand = { body: ExtensionBody; idempotencyKey: string; traceId: string; caller: string };
export type ExtensionReply = {
  kind: "applied" | "state_conflict" | "key_conflict" | "replayed";
  status: number;
  body: EntitlementDetail | ErrorReply;
};

const RESULT = {
  applied: "success",
  state_conflict: "conflict",
  key_conflict: "conflict",
  replayed: "idempotency_reused",
} as const;

/** Runs an extension; throws only on database trouble (the transaction is then rolled back). */
export async function executeExtension(deps: CommandDeps, command: ExtensionCommand): Promise<ExtensionReply> {
  try {
    const reply = await deps.sql.begin((tx) => executeInTransaction(tx, deps, command));
    deps.metrics.record("EXTEND", RESULT[reply.kind]);
    return reply;
  } catch (error) {
    deps.metrics.record("EXTEND", "error");
    throw error;
  }
}

async function executeInTransaction(tx: TransactionSql, deps: CommandDeps, command: ExtensionCommand) {
  const { body, caller, idempotencyKey: key } = command;
  const now = deps.now();
  const entitlement = { userId: body.user_id, sku: body.stock_keeping_unit };
  // Pipelined (one round trip). The expiry row is locked before the entitlement's, the scheduler's order.
  const [stored, , row, current] = await Promise.all([
    openCommand(tx, { caller, key, statementTimeoutMs: deps.statementTimeoutMs }),
    lockExpiry(tx, entitlement),
    extendIfLater(tx, {
      ...entitlement,
      expiresAt: new Date(body.expires_at),
      reason: body.reason,
      purchaseId: body.purchase_id,
      now,
      unlessKeyIsLive: { caller, key },
    }),
    checkEntitlement(tx, entitlement),
  ]);
  const hash = requestHash({ action: "EXTEND", ...body });
  if (stored) {
    if (row) throw new Error("idempotency invariant violated: a replayed key changed an entitlement");
    return replayStored<EntitlementDetail>(stored, hash, DetailSchema);
  }
  assertNotPast(body.expires_at, now);
  const record = (status: number, reply: EntitlementDetail | ErrorReply) => ({
    caller,
    key,
    requestHash: hash,
    responseCode: status,
    responseBody: reply,
    expiresAt: new Date(now.getTime() + deps.idempotencyTtlMs),
  });
  if (!row) {
    const conflict = { code: "ENTITLEMENT_STATE_CONFLICT", message: refusal(current) };
    assertStored(await storeIdempotencyRecord(tx, record(409, conflict)));
    return { kind: "state_conflict" as const, status: 409, body: conflict };
  }
  const detail = toEntitlementDetail(row);
  assertStored(
    await insertAppliedCommand(tx, {
      audit: {
        userId: row.user_id,
        sku: row.stock_keeping_unit,
        action: "EXTEND",
        version: row.version,
        reason: body.reason,
        purchaseId: body.purchase_id,
        requestId: key,
        caller: caller === "" ? null : caller,
        detail: { ...body },
        traceId: command.traceId,
        occurredAt: now,
      },
      event: outboxEventOf("EXTEND", row, body, command.traceId, now),
      reply: record(200, detail),
      expiry: {
        userId: row.user_id,
        skus: [row.stock_keeping_unit],
        expiresAt: new Date(body.expires_at),
        traceId: command.traceId,
        now,
      },
    }),
  );
  return { kind: "applied" as const, status: 200, body: detail };
}

/** Why an extension changed nothing, from the state it found (read after the refused update, in its transaction). */
function refusal(current: EntitlementDetail | undefined): string {
  if (current?.status !== "ACTIVE") return "not ACTIVE";
  if (current.expires_at === null) return "the entitlement has no expiry to extend";
  return `expires_at must be later than the current one (${current.expires_at})`;
}
