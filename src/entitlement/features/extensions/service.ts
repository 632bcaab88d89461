// An extension (docs/api.md): one call of `entitlement_extend` under one idempotency record, as a grant is. An
// ACTIVE entitlement gets the later expires_at (version + 1, audit EXTEND, event EntitlementExtended) and its expiry
// is rescheduled; anything else is a 409 that is remembered under the key like a grant's.

import { extendEntitlement } from "../../write/entitlement-extend.ts";
import { requestHash } from "../../write/idempotency/hash.ts";
import { type CommandDeps, type CommandReply, recordCommand } from "../../write/run.ts";
import { runEntitlementCommand } from "../entitlements/change.ts";
import { EntitlementDetail as DetailSchema, type EntitlementDetail } from "../entitlements/model.ts";
import { eventPayload } from "../entitlements/outbox-event.ts";
import { EXTENSION_REFUSED, ok } from "../entitlements/replies.ts";
import type { ExtensionBody } from "./model.ts";

export type ExtensionCommand = { body: ExtensionBody; idempotencyKey: string; traceId: string; caller: string };
export type ExtensionReply = CommandReply<EntitlementDetail>;

/** Runs an extension; throws only on database trouble (the call is then rolled back as a whole). */
export function executeExtension(deps: CommandDeps, command: ExtensionCommand): Promise<ExtensionReply> {
  const dueAt = new Date(command.body.expires_at);
  return recordCommand(
    deps,
    "EXTEND",
    () => runExtension(deps, command),
    () => ({ events: true, dueAt }),
  );
}

function runExtension(deps: CommandDeps, command: ExtensionCommand): Promise<ExtensionReply> {
  const { body } = command;
  const expiresAt = new Date(body.expires_at);
  return runEntitlementCommand<EntitlementDetail>(deps, command, {
    hash: requestHash({ action: "EXTEND", ...body }),
    ok: DetailSchema,
    expiresAt: body.expires_at,
    write: (context) =>
      extendEntitlement(deps.sql, {
        ...context,
        userId: body.user_id,
        sku: body.stock_keeping_unit,
        reason: body.reason,
        purchaseId: body.purchase_id,
        expiresAt,
        payload: eventPayload("EXTEND", body, command.traceId, context.now),
        detail: { ...body },
        // An extension applies only to an ACTIVE entitlement; the function sets the version.
        applied: ok({
          user_id: body.user_id,
          stock_keeping_unit: body.stock_keeping_unit,
          status: "ACTIVE",
          version: 0,
          updated_at: context.now.toISOString(),
          expires_at: expiresAt.toISOString(),
        }),
        refused: EXTENSION_REFUSED,
      }),
  });
}
