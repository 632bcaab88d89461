// Read throughput through the API with autocannon: the check of one entitlement (the hottest read: a game server asks
// it per player and item) next to the list, over a seeded set of users with ten entitlements each.
import autocannon from "autocannon";
import type postgres from "postgres";
import { type ThroughputResult, throughputOf } from "./grants.ts";

export const READ_USERS = 1_000;
const ITEMS_PER_USER = 10;

/** Ten ACTIVE entitlements for each of READ_USERS users, written straight to the table (reads need no events). */
export async function seedReadSet(sql: postgres.Sql, prefix: string): Promise<void> {
  await sql`
    insert into entitlement.entitlements (user_id, stock_keeping_unit, status, granted_at, source, source_id)
    select ${prefix} || '-' || (i / ${ITEMS_PER_USER}), 'sku-' || (i % ${ITEMS_PER_USER}), 'ACTIVE', now(), 'bench',
           'p-' || i
    from generate_series(0, ${READ_USERS * ITEMS_PER_USER - 1}) as i`;
}

export async function runReadLoad(args: {
  url: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  prefix: string;
  kind: "check" | "list";
}): Promise<ThroughputResult> {
  let i = 0;
  const pathOf = (n: number) => {
    const user = `${args.prefix}-${(n * 7919) % READ_USERS}`;
    return args.kind === "check"
      ? `/v1/users/${user}/entitlements/sku-${n % ITEMS_PER_USER}`
      : `/v1/users/${user}/entitlements`;
  };
  const result = await autocannon({
    url: args.url,
    connections: args.connections,
    duration: args.seconds,
    headers: args.headers,
    requests: [{ method: "GET", setupRequest: (request) => ({ ...request, path: pathOf(i++) }) }],
  });
  return throughputOf(result, args.connections);
}
