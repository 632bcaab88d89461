// An extension (docs/api.md): one call of `extend_entitlement` under one idempotency record, as a grant is. An
// ACTIVE entitlement gets the later expires_at (version + 1, audit EXTEND, event EntitlementExtended) and its expiry
// is rescheduled; anything else is a 409 that is remembered under the key like a grant's. The console's undo of an
// extension (undo.ts) runs through the same two functions with its own write.

import { type Extension, extendEntitlement } from "../../write/extend-entitlement.ts";
import type { CommandOutcome } from "../../write/idempotency-params.ts";
import type { CommandDeps, CommandReply, KeyedCommand } from "../commands/run.ts";
import { runChange } from "../entitlements/change.ts";
import { requestHash } from "../entitlements/hash.ts";
import { EntitlementDetail as DetailSchema, type EntitlementDetail } from "../entitlements/model.ts";
import { eventPayload } from "../entitlements/outbox-event.ts";
import { expiryReply } from "../entitlements/replies.ts";
import type { ExtensionBody } from "./model.ts";

export type ExtensionCommand = KeyedCommand & { body: ExtensionBody };
export type ExtensionReply = CommandReply<EntitlementDetail>;

/** Runs an extension; throws only on database trouble (the call is then rolled back as a whole). */
export function executeExtension(deps: CommandDeps, command: ExtensionCommand): Promise<ExtensionReply> {
  return recordExpiryChange(deps, command, (fields) => extendEntitlement(deps.sql, fields));
}

/**
 * A change of an entitlement's expiry to `command.body.expires_at` through `write`, counted as an EXTEND, the
 * scheduler told of the new due time: an extension, or the console's undo of one.
 */
export function recordExpiryChange(
  deps: CommandDeps,
  command: ExtensionCommand,
  write: (fields: Extension) => Promise<CommandOutcome>,
): Promise<ExtensionReply> {
  const { body } = command;
  const expiresAt = new Date(body.expires_at);
  return runChange<EntitlementDetail>(deps, command, {
    action: "EXTEND",
    hash: requestHash({ action: "EXTEND", ...body }),
    ok: DetailSchema,
    reply: expiryReply(body),
    expiresAt: body.expires_at,
    write: (context) =>
      write({
        ...context,
        userId: body.user_id,
        sku: body.stock_keeping_unit,
        reason: body.reason,
        purchaseId: body.purchase_id,
        expiresAt,
        payload: eventPayload("EXTEND", body, command.traceId, context.now),
        detail: { ...body },
      }),
  });
}
