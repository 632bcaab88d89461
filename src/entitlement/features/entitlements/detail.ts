// The one mapping from an `entitlements` row to what the API answers (one mapper per row type): the command reply, and
// the detail of one entitlement (the check, an extension, each item of the list), which adds expires_at.
import type { EntitlementDetail, EntitlementResponse } from "./model.ts";
import type { EntitlementDetailRow, EntitlementRow } from "./queries.ts";

export function toEntitlementResponse(row: EntitlementRow): EntitlementResponse {
  return {
    user_id: row.user_id,
    stock_keeping_unit: row.stock_keeping_unit,
    status: row.status,
    version: row.version,
    updated_at: row.updated_at.toISOString(),
  };
}

export function toEntitlementDetail(row: EntitlementDetailRow): EntitlementDetail {
  return { ...toEntitlementResponse(row), expires_at: row.expires_at?.toISOString() ?? null };
}
