// What a client gets from each release for one request: its feature service as its route calls it, this release's
// from src/, the previous release's from its own source (previous-release.ts), on the same schema at the same instant.
// Elysia registers TypeBox's string formats (date-time, uuid) when it loads, as it does in the service, where a replay
// checks the stored reply against its schema.
import "elysia";
import type { BundleBody } from "../../src/entitlement/features/bundles/model.ts";
import { executeBundle } from "../../src/entitlement/features/bundles/service.ts";
import type { CommandDeps } from "../../src/entitlement/features/commands/run.ts";
import type { CommandBody } from "../../src/entitlement/features/entitlements/model.ts";
import { executeCommand } from "../../src/entitlement/features/entitlements/service.ts";
import type { ExtensionBody } from "../../src/entitlement/features/extensions/model.ts";
import { executeExtension } from "../../src/entitlement/features/extensions/service.ts";
import type { ReservationInput } from "../../src/entitlement/features/points/model.ts";
import { cancelReservation, createReservation } from "../../src/entitlement/features/points/service.ts";
import type { Sql } from "../../src/shared/db.ts";
import { ApiError } from "../../src/shared/http/errors.ts";
import { previousRelease } from "./previous-release.ts";

// The minute the file starts: an idempotency record is live while the database's own clock is before its expiry.
const T0 = new Date(Math.floor(Date.now() / 60_000) * 60_000);
const TTL_MS = 86_400_000;
export const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
export const iso = (minutes: number) => at(minutes).toISOString();

export type EntitlementBody = CommandBody;

/** One request as a release's routes hand it to its services. */
export type Request =
  | { kind: "GRANT" | "REVOKE" | "EXTEND"; body: EntitlementBody }
  | { kind: "BUNDLE"; body: BundleBody }
  | { kind: "RESERVE"; body: ReservationInput }
  | { kind: "CANCEL"; reservationId: string };

/** What a client gets: the reply, or the status of a refused request. */
export type Answer = { kind: string; status: number; body: unknown } | { refused: number };

export const deps = (sql: Sql, now: Date): CommandDeps => ({
  sql,
  now: () => now,
  idempotencyTtlMs: TTL_MS,
  statementTimeoutMs: 5_000,
  metrics: { record: () => {} },
});

const CURRENT = { executeCommand, executeExtension, executeBundle, createReservation, cancelReservation, ApiError };

/** The services of a release the answers come from, and its error of a refused request. */
export type Services = typeof CURRENT;

/**
 * `run` with the id a reservation's service draws fixed to `id`, so that both releases write the same row: the
 * service draws it before its first await, so the clock of ids is put back as soon as the call returns its promise.
 */
function drawing<T>(id: string | undefined, run: () => Promise<T>): Promise<T> {
  if (id === undefined) return run();
  const draw = crypto.randomUUID;
  crypto.randomUUID = () => id as ReturnType<typeof draw>;
  try {
    return run();
  } finally {
    crypto.randomUUID = draw;
  }
}

/** The release's service for `request`, as its route calls it; `reservationId` is a new reservation's id. */
async function answer(
  services: Services,
  sql: Sql,
  request: Request,
  key: string,
  now: Date,
  reservationId?: string,
): Promise<Answer> {
  const command = { idempotencyKey: key, traceId: `trace-${key}`, caller: "shop" };
  const d = deps(sql, now);
  try {
    if (request.kind === "GRANT" || request.kind === "REVOKE") {
      return await services.executeCommand(d, { ...command, action: request.kind, body: request.body });
    }
    if (request.kind === "EXTEND") {
      return await services.executeExtension(d, { ...command, body: request.body as ExtensionBody });
    }
    if (request.kind === "BUNDLE") return await services.executeBundle(d, { ...command, body: request.body });
    if (request.kind === "RESERVE") {
      const body = request.body;
      return await drawing(reservationId, () => services.createReservation(d, { ...command, body }));
    }
    if (request.kind === "CANCEL") {
      return await services.cancelReservation(d, { ...command, reservationId: request.reservationId });
    }
    throw new Error(`no such request: ${request.kind}`);
  } catch (error) {
    if (error instanceof services.ApiError && error.status < 500) return { refused: error.status };
    throw error;
  }
}

/** This release: the feature's service, as the route calls it. */
export const currentAnswer = (sql: Sql, request: Request, key: string, now: Date): Promise<Answer> =>
  answer(CURRENT, sql, request, key, now);

/** The previous release: its own service, as its route called it; a new reservation gets the id `reservationId`. */
export const previousAnswer = (
  sql: Sql,
  request: Request,
  key: string,
  now: Date,
  reservationId?: string,
): Promise<Answer> => answer(previousRelease, sql, request, key, now, reservationId);

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
