// What a client gets from each release for one request: this release through its feature services, the previous
// release through its own call and its own reply logic (previous-replies.ts), on the same schema at the same instant.
import type { TSchema } from "@sinclair/typebox";
// Elysia registers TypeBox's string formats (date-time, uuid) when it loads, as it does in the service, where a replay
// checks the stored reply against its schema.
import "elysia";
import { BundleResponse } from "../../src/entitlement/features/bundles/model.ts";
import { executeBundle } from "../../src/entitlement/features/bundles/service.ts";
import type { CommandDeps } from "../../src/entitlement/features/commands/run.ts";
import { EntitlementDetail, EntitlementResponse } from "../../src/entitlement/features/entitlements/model.ts";
import { executeCommand } from "../../src/entitlement/features/entitlements/service.ts";
import { executeExtension } from "../../src/entitlement/features/extensions/service.ts";
import { ReservationResponse } from "../../src/entitlement/features/points/model.ts";
import { cancelReservation, createReservation } from "../../src/entitlement/features/points/service.ts";
import type { Sql } from "../../src/shared/db.ts";
import { ApiError } from "../../src/shared/http/errors.ts";
import { sha256Int64 } from "../../src/shared/ids.ts";
import type { PreviousOutcome } from "./previous-calls.ts";
import { bundleRequestHash, pointsRequestHash, requestHash } from "./previous-hash.ts";
import { type PreviousRequest, previousCall, previousReply } from "./previous-replies.ts";

// The minute the file starts: an idempotency record is live while the database's own clock is before its expiry.
const T0 = new Date(Math.floor(Date.now() / 60_000) * 60_000);
const TTL_MS = 86_400_000;
export const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
export const iso = (minutes: number) => at(minutes).toISOString();

export type EntitlementBody = Extract<PreviousRequest, { kind: "GRANT" }>["body"];
export type Request = PreviousRequest;

/** What a client gets: the reply, or the status of a refused request. */
export type Answer = { kind: string; status: number; body: unknown } | { refused: number };

export const deps = (sql: Sql, now: Date): CommandDeps => ({
  sql,
  now: () => now,
  idempotencyTtlMs: TTL_MS,
  statementTimeoutMs: 5_000,
  metrics: { record: () => {} },
});

/** This release: the feature's service, as the route calls it. */
export async function currentAnswer(sql: Sql, request: Request, key: string, now: Date): Promise<Answer> {
  const command = { idempotencyKey: key, traceId: `trace-${key}`, caller: "shop" };
  const d = deps(sql, now);
  try {
    if (request.kind === "GRANT" || request.kind === "REVOKE") {
      return await executeCommand(d, { ...command, action: request.kind, body: request.body as EntitlementBody });
    }
    if (request.kind === "EXTEND") {
      return await executeExtension(d, { ...command, body: request.body as Required<EntitlementBody> });
    }
    if (request.kind === "BUNDLE") return await executeBundle(d, { ...command, body: request.body });
    if (request.kind === "RESERVE") return await createReservation(d, { ...command, body: request.body });
    if (request.kind === "CANCEL")
      return await cancelReservation(d, { ...command, reservationId: request.reservationId });
    throw new Error(`no such request: ${request.kind}`);
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) return { refused: error.status };
    throw error;
  }
}

/** The request's hash as the previous release computes it, and the shape of its stored success. */
function hashOf(request: Request): { hash: string; ok: TSchema } {
  if (request.kind === "BUNDLE") return { hash: bundleRequestHash(request.body), ok: BundleResponse };
  if (request.kind === "RESERVE") {
    const hash = pointsRequestHash({ action: "RESERVE", ...request.body, reason: request.body.reason ?? null });
    return { hash, ok: ReservationResponse };
  }
  if (request.kind === "CANCEL") {
    return {
      hash: pointsRequestHash({ action: "CANCEL", reservation_id: request.reservationId }),
      ok: ReservationResponse,
    };
  }
  const ok = request.kind === "EXTEND" ? EntitlementDetail : EntitlementResponse;
  return { hash: requestHash({ action: request.kind, ...request.body }), ok };
}

/** The previous release: its call, and the answer its own reply logic made of what the call returned. */
export async function previousAnswer(
  sql: Sql,
  request: Request,
  key: string,
  now: Date,
  reservationId?: string,
): Promise<Answer> {
  const { hash, ok } = hashOf(request);
  const k = { caller: "shop", key, lockKey: sha256Int64(key), requestHash: hash, lockTimeoutMs: 5_000 };
  const idempotency = { ...k, recordExpiresAt: new Date(now.getTime() + TTL_MS) };
  const result: PreviousOutcome = await previousCall(sql, request, idempotency, now, `trace-${key}`, reservationId);
  if (result.outcome === "past") return { refused: 400 };
  if (result.outcome === "not_found") return { refused: 404 };
  return previousReply(result, hash, ok);
}

export const grant = (user: string, sku: string, expiresAt?: string): Request => ({
  kind: "GRANT",
  body: {
    user_id: user,
    stock_keeping_unit: sku,
    reason: "purchase",
    purchase_id: `p-${sku}`,
    ...(expiresAt ? { expires_at: expiresAt } : {}),
  },
});
export const revoke = (user: string, sku: string): Request => ({
  kind: "REVOKE",
  body: { user_id: user, stock_keeping_unit: sku, reason: "refund", purchase_id: `r-${sku}` },
});
export const extend = (user: string, sku: string, expiresAt: string): Request => ({
  kind: "EXTEND",
  body: { user_id: user, stock_keeping_unit: sku, reason: "extension", purchase_id: `e-${sku}`, expires_at: expiresAt },
});
