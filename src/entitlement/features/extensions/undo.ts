// The undo of an extension, for the console's undo (console/undo.ts): one call of `undo_extension` under one
// idempotency record, as an extension is (service.ts, whose command path it shares). While the entitlement is still
// at the version the extension left, it gets back the expiry the extension replaced (version + 1, audit EXTEND, event
// EntitlementExtended carrying that earlier expiry) and its expiry is rescheduled to it; anything else is a 409
// remembered under the key. Not an API route: the API's extension moves an expiry later only.

import { undoExtension } from "../../write/undo-extension.ts";
import type { CommandDeps } from "../commands/run.ts";
import type { ExtensionBody } from "./model.ts";
import { type ExtensionCommand, type ExtensionReply, recordExpiryChange } from "./service.ts";

/** The extension's fields with the expiry it replaced, and the version it left. */
export type ExtensionUndoBody = ExtensionBody & { version: number };
export type ExtensionUndoCommand = Omit<ExtensionCommand, "body"> & { body: ExtensionUndoBody };

/**
 * Runs the undo (counted as an EXTEND); throws only on database trouble (the call is then rolled back as a whole).
 * Its key (console-undo-<audit_id>) is its own; the hash is an extension's, to the earlier expiry.
 */
export function executeExtensionUndo(deps: CommandDeps, command: ExtensionUndoCommand): Promise<ExtensionReply> {
  const { version, ...body } = command.body;
  return recordExpiryChange(deps, { ...command, body }, (fields) => undoExtension(deps.sql, { ...fields, version }));
}
