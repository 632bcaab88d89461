// Bundles with an expiry in the drill's load: one worker grants a fresh user three items in one bundle, each expiring
// 1.5–3 s later, so expiries fall due on every replica while the fault is on. Afterwards every accepted bundle item
// must have been granted once and revoked by its expiry once: its events (v0 granted, v1 revoked with source `expiry`)
// go through the same ledger as the grants and revokes (ledger.ts), under a prefix of their own.
import type postgres from "postgres";
import { type Answer, postJson } from "./client.ts";
import { checkLedger, type LedgerReport, waitForQuiescence } from "./ledger.ts";
import type { Recorded } from "./load.ts";

const ITEMS = ["sku-pass", "sku-skin", "sku-emote"];
const TIMEOUT_MS = 15_000;

type Bundle = { key: string; body: Record<string, unknown>; answer?: Answer; error?: string; settled?: Answer };

export type ExpiringLoad = { bundles: Bundle[]; stop: () => Promise<void> };

const post = (url: string, token: string, b: Bundle) =>
  postJson(`${url}/v1/entitlements/bundle-grants`, token, b.key, b.body, TIMEOUT_MS);

export function startExpiringLoad(o: {
  prefix: string;
  urls: () => string[];
  token: string;
  pauseMs: number;
  random: () => number;
}): ExpiringLoad {
  const bundles: Bundle[] = [];
  let stopped = false;
  const run = async () => {
    for (let n = 0; !stopped; n++) {
      const urls = o.urls();
      const body = {
        user_id: `${o.prefix}b${n}`,
        stock_keeping_units: ITEMS,
        reason: "drill-pass",
        purchase_id: `p-${crypto.randomUUID()}`,
        expires_at: new Date(Date.now() + 1_500 + o.random() * 1_500).toISOString(),
      };
      const bundle: Bundle = { key: `${o.prefix}b${n}-${crypto.randomUUID()}`, body };
      Object.assign(bundle, await post(urls[n % urls.length] as string, o.token, bundle));
      bundles.push(bundle);
      await Bun.sleep((bundle.answer ? 0 : 250) + o.pauseMs * (0.5 + o.random()));
    }
  };
  const running = run();
  return {
    bundles,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

const definite = (a: Answer | undefined) => a !== undefined && a.status < 500;

/**
 * Replays every bundle without a definite answer (same key and body), waits until every expiry of the prefix ran and
 * the pipeline is quiet, then holds the tables against the two changes each accepted item must have made.
 */
export async function checkExpiringLoad(
  sql: postgres.Sql,
  load: ExpiringLoad,
  o: { prefix: string; urls: () => string[]; token: string; timeoutMs: number },
): Promise<LedgerReport & { bundles: number; items: number }> {
  const deadline = Date.now() + o.timeoutMs;
  for (const b of load.bundles.filter((b) => !definite(b.answer))) {
    while (!definite(b.settled) && Date.now() < deadline) {
      const urls = o.urls();
      b.settled = (await post(urls[0] as string, o.token, b)).answer;
      if (!definite(b.settled)) await Bun.sleep(250);
    }
  }
  const problems: string[] = [];
  const expected: Recorded[] = [];
  const change = (user: string, sku: string, version: number) =>
    ({
      kind: "fresh",
      answer: { status: 200, body: { user_id: user, stock_keeping_unit: sku, version }, text: "" },
    }) as unknown as Recorded;
  let bundles = 0;
  for (const b of load.bundles) {
    const a = definite(b.answer) ? b.answer : b.settled;
    if (!a) problems.push(`bundle ${b.key} never settled`);
    if (a?.status !== 200) continue;
    bundles++;
    for (const item of a.body.items as { stock_keeping_unit: string; changed: boolean }[]) {
      if (!item.changed) problems.push(`bundle ${b.key}: a fresh user's ${item.stock_keeping_unit} unchanged`);
      expected.push(change(String(b.body.user_id), item.stock_keeping_unit, 0));
      expected.push(change(String(b.body.user_id), item.stock_keeping_unit, 1));
    }
  }
  const pattern = `${o.prefix}%`;
  while (Date.now() < deadline) {
    const [row] = await sql<{ open: number }[]>`
      select count(*)::int as open from entitlement.entitlement_expiries
      where user_id like ${pattern} and status <> 'DONE'`;
    if (row?.open === 0) break;
    await Bun.sleep(250);
  }
  if ((await waitForQuiescence(sql, o.prefix, expected.length, Math.max(1_000, deadline - Date.now()))) === undefined)
    problems.push("bundles and expiries not quiescent in time");
  const ledger = await checkLedger(sql, o.prefix, expected);
  const [left] = await sql<{ n: number }[]>`
    select count(*)::int as n from entitlement.entitlements
    where user_id like ${pattern} and (status <> 'REVOKED' or source <> 'expiry' or version <> 1)`;
  if (left?.n) problems.push(`${left.n} bundle items not revoked exactly once by their expiry`);
  return { ...ledger, problems: [...problems, ...ledger.problems], bundles, items: expected.length / 2 };
}
