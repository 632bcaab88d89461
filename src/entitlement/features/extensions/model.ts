// TypeBox schema of an extension (docs/api.md): the one source for validation, types and OpenAPI. The reply is the
// entitlement as the check route shows it, with its new expires_at.
import { type Static, Type } from "@sinclair/typebox";
import { CommandBody, EntitlementDetail, ExpiresAtInput } from "../entitlements/model.ts";

const { user_id, stock_keeping_unit, reason, purchase_id } = CommandBody.properties;

export const ExtensionBody = Type.Object(
  {
    user_id,
    stock_keeping_unit,
    expires_at: { ...ExpiresAtInput, description: "Later than the current expires_at; at most 10 years ahead." },
    reason,
    purchase_id,
  },
  { title: "EntitlementExtension" },
);
export type ExtensionBody = Static<typeof ExtensionBody>;

const REPLY_KEYS = Object.keys(EntitlementDetail.properties);

/** The reply text; a replay re-renders the stored JSONB through this, so it is byte-identical to the first reply. */
export function renderExtensionReply(status: number, body: unknown): string {
  return JSON.stringify(body, status === 200 ? REPLY_KEYS : ["code", "message"]);
}
