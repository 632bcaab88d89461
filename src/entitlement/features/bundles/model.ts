// TypeBox schemas of bundle grants (docs/api.md): the one source for validation, types and OpenAPI.
import { type Static, Type } from "@sinclair/typebox";
import { CommandBody, EntitlementState, ExpiresAtInput, StockKeepingUnit } from "../entitlements/model.ts";

export const MAX_BUNDLE_ITEMS = 100;

const { user_id, reason, purchase_id } = CommandBody.properties;

export const BundleBody = Type.Object(
  {
    user_id,
    stock_keeping_units: Type.Array(StockKeepingUnit, {
      minItems: 1,
      maxItems: MAX_BUNDLE_ITEMS,
      uniqueItems: true,
      description: `1–${MAX_BUNDLE_ITEMS} distinct items, granted together or not at all.`,
    }),
    reason,
    purchase_id,
    expires_at: Type.Optional({
      ...ExpiresAtInput,
      description: `${ExpiresAtInput.description} Set on the items granted.`,
    }),
  },
  { title: "BundleGrant" },
);
export type BundleBody = Static<typeof BundleBody>;

export const BundleItem = Type.Object(
  {
    ...EntitlementState,
    changed: Type.Boolean({ description: "false: it was already ACTIVE and is left as it was." }),
  },
  { title: "BundleItem" },
);
export type BundleItem = Static<typeof BundleItem>;

export const BundleResponse = Type.Object(
  { user_id: Type.String(), items: Type.Array(BundleItem, { description: "In the order of the request." }) },
  { title: "BundleGrantResult" },
);
export type BundleResponse = Static<typeof BundleResponse>;

/** Keys in schema order at every level (JSON.stringify applies the list to nested objects too). */
const REPLY_KEYS = ["user_id", "items", ...Object.keys(BundleItem.properties)];

/** The reply text; a replay re-renders the stored JSONB through this, so it is byte-identical to the first reply. */
export function renderBundleReply(status: number, body: unknown): string {
  return JSON.stringify(body, status === 200 ? REPLY_KEYS : ["code", "message"]);
}
