// A bundle grant (docs/api.md): a grant of 1–100 items of one user under one idempotency record, one call of
// `entitlement_grant` as a single grant is (a grant is a bundle of one). Every item that is not ACTIVE is granted
// with its own audit row and event; the reply lists every item in the request's order.

import { grantEntitlements } from "../../write/grant-entitlements.ts";
import type { StoredReply } from "../../write/idempotency-params.ts";
import type { CommandDeps, CommandReply, KeyedCommand } from "../commands/run.ts";
import { runChange } from "../entitlements/change.ts";
import { eventPayload } from "../entitlements/outbox-event.ts";
import { type ChangeFacts, ok } from "../entitlements/replies.ts";
import { bundleRequestHash } from "./hash.ts";
import { type BundleBody, BundleResponse } from "./model.ts";

export type BundleCommand = KeyedCommand & { body: BundleBody };

export type BundleReply = CommandReply<BundleResponse>;

/** Runs a bundle grant; throws only on database trouble (the call is then rolled back as a whole). */
export function executeBundle(deps: CommandDeps, command: BundleCommand): Promise<BundleReply> {
  const { body } = command;
  return runChange<BundleResponse>(deps, command, {
    action: "BUNDLE_GRANT",
    hash: bundleRequestHash(body),
    ok: BundleResponse,
    reply: bundleReply(body),
    expiresAt: body.expires_at,
    write: (context) =>
      grantEntitlements(deps.sql, {
        ...context,
        userId: body.user_id,
        skus: body.stock_keeping_units,
        reason: body.reason,
        purchaseId: body.purchase_id,
        expiresAt: body.expires_at === undefined ? null : new Date(body.expires_at),
        payload: eventPayload("GRANT", body, command.traceId, context.now),
        detail: {
          user_id: body.user_id,
          reason: body.reason,
          purchase_id: body.purchase_id,
          bundle_size: body.stock_keeping_units.length,
        },
        bundle: true,
      }),
  });
}

/** Every item in the request's order, ACTIVE, with its version, updated_at and whether this grant changed it. */
export const bundleReply =
  (body: BundleBody) =>
  (stored: unknown): StoredReply => {
    const facts = stored as ChangeFacts;
    if (facts.kind !== "changed") throw new Error(`no bundle reply for the facts ${JSON.stringify(stored)}`);
    const items = facts.items.map((item) => ({
      stock_keeping_unit: item.stock_keeping_unit,
      status: "ACTIVE",
      version: item.version,
      updated_at: new Date(item.updated_at).toISOString(),
      changed: item.changed,
    }));
    return ok({ user_id: body.user_id, items });
  };
