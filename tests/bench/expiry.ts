// Expiry lateness: entitlements granted through the API (bundles of 100) with one expires_at a few seconds ahead,
// then the time from expires_at to the scheduler's revoke of each, read from entitlement_expiries.executed_at.
import type postgres from "postgres";
import type { ApiTarget } from "./grants.ts";
import { summarize } from "./stats.ts";

export type ExpiryLateness = { expired: number; p50Ms: number; p99Ms: number; maxMs: number; seconds: number };

const ITEMS = 100;

export async function measureExpiryLateness(
  args: ApiTarget & {
    sql: postgres.Sql;
    count: number;
    leadMs: number;
    prefix: string;
    timeoutMs: number;
  },
): Promise<ExpiryLateness> {
  const expiresAt = new Date(Date.now() + args.leadMs);
  const users = Math.ceil(args.count / ITEMS);
  await Promise.all(
    Array.from({ length: users }, async (_, u) => {
      const response = await fetch(`${args.url}/v1/entitlements/bundle-grants`, {
        method: "POST",
        headers: { ...args.headers, "content-type": "application/json", "idempotency-key": `${args.prefix}-${u}` },
        body: JSON.stringify({
          user_id: `${args.prefix}-${u}`,
          stock_keeping_units: Array.from({ length: ITEMS }, (_, i) => `sku-${i}`),
          reason: "bench",
          purchase_id: `p-${args.prefix}-${u}`,
          expires_at: expiresAt.toISOString(),
        }),
      });
      if (response.status !== 200) throw new Error(`bundle grant: ${response.status} ${await response.text()}`);
    }),
  );
  const pattern = `${args.prefix}-%`;
  const started = Date.now();
  for (;;) {
    const [row] = await args.sql<{ done: number }[]>`
      select count(*)::int as done from entitlement.entitlement_expiries
      where user_id like ${pattern} and status = 'DONE'`;
    if ((row?.done ?? 0) >= users * ITEMS) break;
    if (Date.now() - started > args.timeoutMs) throw new Error(`expiries not done within ${args.timeoutMs} ms`);
    await Bun.sleep(100);
  }
  const rows = await args.sql<{ ms: number }[]>`
    select extract(epoch from executed_at - expires_at)::float8 * 1000 as ms from entitlement.entitlement_expiries
    where user_id like ${pattern}`;
  const s = summarize(rows.map((r) => r.ms));
  return { expired: s.n, p50Ms: s.p50, p99Ms: s.p99, maxMs: s.max, seconds: (Date.now() - expiresAt.getTime()) / 1000 };
}
