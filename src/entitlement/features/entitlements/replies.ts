// The replies of the entitlement commands. A grant's and a revoke's (a bundle's too, bundles/service.ts) are made here
// from the facts their function stored, on the first answer and on every replay alike; an extension's are still made
// before the call, the function storing the one that happened with the values only the database knows filled in. A
// refused transition is a 409 that is remembered under the key like any reply.
import type { JSONValue } from "postgres";
import type { ExtensionRefusals } from "../../write/entitlement-extend.ts";
import type { ExtensionUndoRefusals } from "../../write/entitlement-extend-undo.ts";
import type { StoredReply } from "../../write/idempotency-params.ts";
import { toEntitlementResponse } from "./detail.ts";
import { type Action, type CommandBody, TARGET_STATUS } from "./model.ts";

export const ok = (body: JSONValue): StoredReply => ({ code: 200, body });

const stateConflict = (message: string): StoredReply => ({
  code: 409,
  body: { code: "ENTITLEMENT_STATE_CONFLICT", message },
});

export const ALREADY_ACTIVE = stateConflict("already ACTIVE");
export const ALREADY_REVOKED = stateConflict("already REVOKED");

/** An entitlement without expiry never expires, so no date is later: it is refused like an earlier one. */
export const EXTENSION_REFUSED: ExtensionRefusals = {
  not_active: stateConflict("not ACTIVE"),
  no_expiry: stateConflict("the entitlement has no expiry to extend"),
  not_later: stateConflict("expires_at must be later than the current one ({expires_at})"),
};

/** The console's undo of an extension applies only to the change it undoes, and only moves an expiry back. */
export const EXTENSION_UNDO_REFUSED: ExtensionUndoRefusals = {
  changed: stateConflict("the entitlement has changed since the extension"),
  not_earlier: stateConflict("the expiry before the extension is not earlier than the current one"),
};

/** One item of a change as its function remembers it: updated_at as a JSON string, read back as a Date. */
export type ItemFacts = { stock_keeping_unit: string; version: number; updated_at: string; changed: boolean };

/** What a grant or a revoke stored: each item of the request as the change left it, or nothing changed. */
export type ChangeFacts = { kind: "changed"; items: ItemFacts[] } | { kind: "unchanged" };

/** The reply of a grant or a revoke of one item, from its facts: the item as the change left it, or the 409. */
export const changeReply =
  (action: Action, body: CommandBody) =>
  (stored: unknown): StoredReply => {
    const facts = stored as ChangeFacts;
    if (facts.kind === "unchanged") return action === "GRANT" ? ALREADY_ACTIVE : ALREADY_REVOKED;
    const item = facts.items[0];
    if (facts.kind !== "changed" || !item) throw new Error(`no reply for the facts ${JSON.stringify(stored)}`);
    const row = { user_id: body.user_id, stock_keeping_unit: body.stock_keeping_unit, status: TARGET_STATUS[action] };
    return ok({
      ...toEntitlementResponse({ ...row, version: item.version, updated_at: new Date(item.updated_at) }),
      // A grant that sets an expiry says so in its reply, normalised to UTC as the check route shows it.
      ...(body.expires_at === undefined ? {} : { expires_at: new Date(body.expires_at).toISOString() }),
    });
  };
