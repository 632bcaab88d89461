// The undo of an extension, for the console's undo (console/undo.ts): one call of `entitlement_extend_undo` under one
// idempotency record, as an extension is. While the entitlement is still at the version the extension left, it gets
// back the expiry the extension replaced (version + 1, audit EXTEND, event EntitlementExtended carrying that earlier
// expiry) and its expiry is rescheduled to it; anything else is a 409 remembered under the key. Not an API route: the
// API's extension moves an expiry later only.

import { undoExtension } from "../../write/entitlement-extend-undo.ts";
import { requestHash } from "../../write/idempotency/hash.ts";
import { type CommandDeps, recordCommand } from "../../write/run.ts";
import { runEntitlementCommand } from "../entitlements/change.ts";
import { EntitlementDetail as DetailSchema, type EntitlementDetail } from "../entitlements/model.ts";
import { eventPayload } from "../entitlements/outbox-event.ts";
import { EXTENSION_UNDO_REFUSED, ok } from "../entitlements/replies.ts";
import type { ExtensionBody } from "./model.ts";
import type { ExtensionReply } from "./service.ts";

/** The extension's fields with the expiry it replaced, and the version it left. */
export type ExtensionUndoBody = ExtensionBody & { version: number };
export type ExtensionUndoCommand = {
  body: ExtensionUndoBody;
  idempotencyKey: string;
  traceId: string;
  caller: string;
};

/** Runs the undo (counted as an EXTEND); throws only on database trouble (the call is then rolled back as a whole). */
export function executeExtensionUndo(deps: CommandDeps, command: ExtensionUndoCommand): Promise<ExtensionReply> {
  // The expiry moves earlier: the scheduler is told of the new due time.
  const dueAt = new Date(command.body.expires_at);
  return recordCommand(
    deps,
    "EXTEND",
    () => runUndo(deps, command),
    () => ({ events: true, dueAt }),
  );
}

function runUndo(deps: CommandDeps, command: ExtensionUndoCommand): Promise<ExtensionReply> {
  const { version, ...body } = command.body;
  const expiresAt = new Date(body.expires_at);
  return runEntitlementCommand<EntitlementDetail>(deps, command, {
    // Its key (console-undo-<audit_id>) is its own; the hash is an extension's, to the earlier expiry.
    hash: requestHash({ action: "EXTEND", ...body }),
    ok: DetailSchema,
    expiresAt: body.expires_at,
    write: (context) =>
      undoExtension(deps.sql, {
        ...context,
        userId: body.user_id,
        sku: body.stock_keeping_unit,
        reason: body.reason,
        purchaseId: body.purchase_id,
        expiresAt,
        version,
        payload: eventPayload("EXTEND", body, command.traceId, context.now),
        detail: { ...body },
        applied: ok({
          user_id: body.user_id,
          stock_keeping_unit: body.stock_keeping_unit,
          status: "ACTIVE",
          version: 0,
          updated_at: context.now.toISOString(),
          expires_at: expiresAt.toISOString(),
        }),
        refused: EXTENSION_UNDO_REFUSED,
      }),
  });
}
