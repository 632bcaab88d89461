// The bundle body, checked field by field in schema order like a grant's, so each mistake gets its precise 400.
import { badRequest } from "../../../shared/http/errors.ts";
import { checkExpiresAt, checkField, readJsonObject } from "../entitlements/validation.ts";
import { type BundleBody, MAX_BUNDLE_ITEMS, BundleBody as Schema } from "./model.ts";

const { user_id, stock_keeping_units, reason, purchase_id } = Schema.properties;

export async function readBundleBody(request: Request, now: Date): Promise<BundleBody> {
  const body = await readJsonObject(request);
  const checked: BundleBody = {
    user_id: checkField("user_id", user_id, body.user_id),
    stock_keeping_units: checkItems(body.stock_keeping_units),
    reason: checkField("reason", reason, body.reason),
    purchase_id: checkField("purchase_id", purchase_id, body.purchase_id),
  };
  if (body.expires_at === undefined || body.expires_at === null) return checked;
  return { ...checked, expires_at: checkExpiresAt(body.expires_at, now) };
}

function checkItems(value: unknown): string[] {
  if (value === undefined || value === null) throw badRequest("stock_keeping_units is required");
  if (!Array.isArray(value)) throw badRequest("stock_keeping_units must be an array");
  if (value.length === 0 || value.length > MAX_BUNDLE_ITEMS) {
    throw badRequest(`stock_keeping_units must hold 1 to ${MAX_BUNDLE_ITEMS} items`);
  }
  const items = value.map((item, i) => checkField(`stock_keeping_units[${i}]`, stock_keeping_units.items, item));
  if (new Set(items).size !== items.length) throw badRequest("stock_keeping_units must be distinct");
  return items;
}
