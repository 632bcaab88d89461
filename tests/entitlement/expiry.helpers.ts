// Fixtures of the expiry tests: entitlements granted with an expiry through the API (bundles, so a few requests make
// many), and the ledger of what expiry must have done: each expired entitlement revoked exactly once.
import type { Sql } from "../../src/shared/db.ts";
import { type App, send } from "./api.helpers.ts";

/** `users` bundles of `items` items each, all expiring at `expiresAt`; returns the user ids. */
export async function grantExpiring(
  app: App,
  args: { prefix: string; users: number; items: number; expiresAt: Date },
): Promise<string[]> {
  const users = Array.from({ length: args.users }, (_, u) => `${args.prefix}-${u}`);
  for (const user of users) {
    const reply = await send(
      app,
      new Request("http://localhost/v1/entitlements/bundle-grants", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": `grant-${user}` },
        body: JSON.stringify({
          user_id: user,
          stock_keeping_units: Array.from({ length: args.items }, (_, i) => `sku-${i}`),
          reason: "season-pass",
          purchase_id: `p-${user}`,
          expires_at: args.expiresAt.toISOString(),
        }),
      }),
    );
    if (reply.status !== 200) throw new Error(`bundle for ${user}: ${reply.status} ${reply.text}`);
  }
  return users;
}

export async function expiryCounts(sql: Sql, prefix: string) {
  const [row] = await sql<{ active: number; revoked: number; done: number }[]>`
    select count(*) filter (where status = 'ACTIVE')::int as active,
           count(*) filter (where status = 'REVOKED')::int as revoked,
           (select count(*)::int from entitlement_expiries where user_id like ${`${prefix}-%`} and status = 'DONE') as done
    from entitlements where user_id like ${`${prefix}-%`}`;
  return row ?? { active: 0, revoked: 0, done: 0 };
}

/**
 * What must hold once every entitlement of the prefix expired: REVOKED at version 1 with source `expiry`, exactly
 * two audit rows (GRANT, EXPIRE) and two events (granted, then revoked with source `expiry`), never revoked early.
 */
export async function expiryProblems(sql: Sql, prefix: string): Promise<string[]> {
  const pattern = `${prefix}-%`;
  const rows = await sql<
    {
      pair: string;
      status: string;
      version: number;
      source: string;
      expires: number;
      revokes: number;
      audits: number;
      early: boolean;
    }[]
  >`
    select e.user_id || '/' || e.stock_keeping_unit as pair, e.status, e.version::int as version, e.source,
      (select count(*)::int from entitlement_audit a where a.user_id = e.user_id
         and a.stock_keeping_unit = e.stock_keeping_unit and a.action = 'EXPIRE') as expires,
      (select count(*)::int from entitlement_audit a where a.user_id = e.user_id
         and a.stock_keeping_unit = e.stock_keeping_unit) as audits,
      (select count(*)::int from outbox_events o where o.aggregate_key = e.user_id || ':' || e.stock_keeping_unit
         and o.event_type = 'EntitlementRevoked' and o.payload->>'source' = 'expiry') as revokes,
      e.revoked_at < (select x.expires_at from entitlement_expiries x
                      where x.user_id = e.user_id and x.stock_keeping_unit = e.stock_keeping_unit) as early
    from entitlements e where e.user_id like ${pattern}`;
  const problems: string[] = [];
  for (const r of rows) {
    const wrong = [
      r.status !== "REVOKED" && `status ${r.status}`,
      r.version !== 1 && `version ${r.version}`,
      r.source !== "expiry" && `source ${r.source}`,
      r.expires !== 1 && `${r.expires} EXPIRE audit rows`,
      r.audits !== 2 && `${r.audits} audit rows`,
      r.revokes !== 1 && `${r.revokes} expiry events`,
      r.early && "revoked before expires_at",
    ].filter(Boolean);
    if (wrong.length && problems.length < 10) problems.push(`${r.pair}: ${wrong.join(", ")}`);
  }
  return problems;
}

/** Seconds from expires_at to execution of every executed expiry of the prefix, sorted. */
export async function expiryLateness(sql: Sql, prefix: string): Promise<number[]> {
  const rows = await sql<{ s: number }[]>`
    select extract(epoch from executed_at - expires_at)::float8 as s from entitlement_expiries
    where user_id like ${`${prefix}-%`} and status = 'DONE' order by 1`;
  return rows.map((r) => r.s);
}
