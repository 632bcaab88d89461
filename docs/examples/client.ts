// A typed Entitlement client in a few lines: openapi-fetch over the types that openapi-typescript generates from
// docs/openapi.json (entitlement-api.ts; `bunx openapi-typescript docs/openapi.json -o entitlement-api.ts` in your own
// project). Every path, parameter, body and answer below is checked by the compiler; a test runs it against a live
// service. Run it yourself: `bun docs/examples/client.ts` with ENTITLEMENT, TOKEN and USER_ID set (see docs/api.md).
import createClient from "openapi-fetch";
import type { paths } from "./entitlement-api.ts";

export async function clientExample(baseUrl: string, token: string, userId: string) {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
  const key = (what: string) => ({ "idempotency-key": `${what}-${userId}` }); // one key per operation: safe to retry

  const granted = await api.POST("/v1/entitlements/grants", {
    params: { header: key("grant") },
    body: { user_id: userId, stock_keeping_unit: "item1", reason: "purchase", purchase_id: "p_1" },
  });
  if (!granted.data) throw new Error(`grant: ${granted.error?.code}`); // error.code is a typed union of codes

  const page = await api.GET("/v1/users/{user_id}/entitlements", {
    params: { path: { user_id: userId }, query: { limit: 10 } }, // limit is a number
  });

  const item = { user_id: userId, stock_keeping_unit: "item1" };
  const checked = await api.GET("/v1/users/{user_id}/entitlements/{stock_keeping_unit}", { params: { path: item } });
  const etag = checked.response.headers.get("etag") ?? "";
  const unchanged = await api.GET("/v1/users/{user_id}/entitlements/{stock_keeping_unit}", {
    params: { path: item, header: { "If-None-Match": etag } }, // 304 while the entitlement stays at that version
  });

  const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
  const reserved = await api.POST("/v1/points/reservations", {
    params: { header: key("reserve") },
    body: { user_id: userId, point_amount: 100, execute_at: tomorrow, reason: "campaign" },
  });
  if (!reserved.data) throw new Error(`reserve: ${reserved.error?.code}`);
  const cancelled = await api.POST("/v1/points/reservations/{reservation_id}/cancel", {
    params: { path: { reservation_id: reserved.data.reservation_id }, header: key("cancel") },
  });

  return {
    granted: granted.data.status,
    listed: page.data?.entitlements.map((e) => e.stock_keeping_unit) ?? [],
    checkStatus: checked.response.status,
    conditionalStatus: unchanged.response.status,
    reservation: reserved.data.status,
    cancelled: cancelled.data?.status,
  };
}

if (import.meta.main) {
  const env = (name: string) => process.env[name] ?? "";
  console.log(await clientExample(env("ENTITLEMENT"), env("TOKEN"), env("USER_ID")));
}
