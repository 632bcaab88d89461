// The replies of the entitlement commands, made here before the call (write/entitlement-*.ts): the function stores the
// one that happened, with the values only the database knows filled in. A refused transition is a 409 that is
// remembered under the key like any reply.
import type { JSONValue } from "postgres";
import type { ExtensionRefusals } from "../../write/entitlement-extend.ts";
import type { ExtensionUndoRefusals } from "../../write/entitlement-extend-undo.ts";
import type { StoredReply } from "../../write/idempotency-params.ts";

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
