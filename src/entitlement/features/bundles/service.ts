// A bundle grant (docs/api.md): a grant of 1–100 items of one user under one idempotency record, one call of
// `entitlement_grant` as a single grant is (a grant is a bundle of one). Every item that is not ACTIVE is granted
// with its own audit row and event; the reply lists every item in the request's order.

import { grantEntitlements } from "../../write/entitlement-grant.ts";
import type { CommandDeps, CommandReply, KeyedCommand } from "../commands/run.ts";
import { runChange } from "../entitlements/change.ts";
import { eventPayload } from "../entitlements/outbox-event.ts";
import { ok } from "../entitlements/replies.ts";
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
        // Every item in the request's order, ACTIVE once granted; the function adds each one's version, updated_at
        // and whether this grant changed it.
        applied: ok({
          user_id: body.user_id,
          items: body.stock_keeping_units.map((sku) => ({ stock_keeping_unit: sku, status: "ACTIVE" })),
        }),
        refused: null,
      }),
  });
}
