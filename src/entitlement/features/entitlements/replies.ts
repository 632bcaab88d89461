// The replies of the entitlement commands, made here from the facts their function stored (a bundle's in
// bundles/service.ts), on the first answer and on every replay alike. A refused transition is a 409 that is
// remembered under the key like any reply.
import type { JSONValue } from "postgres";
import type { StoredReply } from "../../write/idempotency-params.ts";
import { toEntitlementResponse } from "./detail.ts";
import { type Action, type CommandBody, TARGET_STATUS } from "./model.ts";

export const ok = (body: JSONValue): StoredReply => ({ code: 200, body });

const stateConflict = (message: string): StoredReply => ({
  code: 409,
  body: { code: "ENTITLEMENT_STATE_CONFLICT", message },
});

const ALREADY_ACTIVE = stateConflict("already ACTIVE");
const ALREADY_REVOKED = stateConflict("already REVOKED");

/** Why an extension or its undo is refused; an entitlement without expiry never expires, so no date is later. */
const EXPIRY_REFUSED: Record<string, (facts: { expires_at?: string }) => StoredReply> = {
  not_active: () => stateConflict("not ACTIVE"),
  no_expiry: () => stateConflict("the entitlement has no expiry to extend"),
  not_later: (facts) =>
    stateConflict(
      `expires_at must be later than the current one (${new Date(facts.expires_at as string).toISOString()})`,
    ),
  // The console's undo of an extension applies only to the change it undoes, and only moves an expiry back.
  changed_since: () => stateConflict("the entitlement has changed since the extension"),
  not_earlier: () => stateConflict("the expiry before the extension is not earlier than the current one"),
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

/** What an extension or its undo stored: the item as the change left it, or why nothing changed. */
export type ExpiryFacts =
  | { kind: "changed"; items: ItemFacts[] }
  | { kind: "not_active" | "no_expiry" | "changed_since" | "not_earlier" }
  | { kind: "not_later"; expires_at: string };

/** The reply of an extension or its undo to `body.expires_at`, from its facts: the item with its expiry, or the 409. */
export const expiryReply =
  (body: { user_id: string; stock_keeping_unit: string; expires_at: string }) =>
  (stored: unknown): StoredReply => {
    const facts = stored as ExpiryFacts;
    const refused = EXPIRY_REFUSED[facts.kind];
    if (refused) return refused(facts as { expires_at?: string });
    const item = facts.kind === "changed" ? facts.items[0] : undefined;
    if (!item) throw new Error(`no reply for the facts ${JSON.stringify(stored)}`);
    return ok({
      user_id: body.user_id,
      stock_keeping_unit: body.stock_keeping_unit,
      // Either applies only to an ACTIVE entitlement.
      status: "ACTIVE",
      version: item.version,
      updated_at: new Date(item.updated_at).toISOString(),
      expires_at: new Date(body.expires_at).toISOString(),
    });
  };
