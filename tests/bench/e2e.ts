// End-to-end latency: grants at a fixed arrival rate (an open loop: a slow answer does not delay the next request);
// for each, the time from its 200 (the commit) to its notification's sent_at. Every grant has a fresh user, so the
// notification is found by user_id.
import type postgres from "postgres";
import type { ApiTarget } from "./grants.ts";
import { summarize } from "./stats.ts";

export type E2eResult = {
  rate: number;
  seconds: number;
  sent: number;
  ok: number;
  delivered: number;
  grantP50Ms: number;
  grantP99Ms: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  /** p50 / p99 ms of each stage, from the database's own timestamps (see `stagesOf`). */
  stages: StageTimes;
};

/**
 * Where one notification's time goes, from the database's own timestamps: relay (the outbox row's transaction start →
 * published_at), consume (published → the notification stored, its created_at), deliver (stored → sent_at).
 */
export type StageTimes = Record<"relay" | "consume" | "deliver" | "total", { p50: number; p99: number }>;

async function stagesOf(sql: postgres.Sql, prefix: string): Promise<StageTimes> {
  const rows = await sql<{ relay: number; consume: number; deliver: number; total: number }[]>`
    select extract(epoch from o.published_at - o.created_at)::float8 * 1000 as relay,
           extract(epoch from n.created_at - o.published_at)::float8 * 1000 as consume,
           extract(epoch from n.sent_at - n.created_at)::float8 * 1000 as deliver,
           extract(epoch from n.sent_at - o.created_at)::float8 * 1000 as total
    from notification.notifications n
    join entitlement.outbox_events o on o.event_id = n.event_id
    where n.user_id like ${`${prefix}-%`} and n.status = 'SENT' and o.published_at is not null`;
  const stage = (key: keyof StageTimes) => {
    const s = summarize(rows.map((r) => r[key]));
    return { p50: Math.round(s.p50 * 10) / 10, p99: Math.round(s.p99 * 10) / 10 };
  };
  return { relay: stage("relay"), consume: stage("consume"), deliver: stage("deliver"), total: stage("total") };
}

async function grantAtRate(args: {
  url: string;
  headers: Record<string, string>;
  rate: number;
  seconds: number;
  prefix: string;
}) {
  const answered = new Map<string, number>();
  const grantMs: number[] = [];
  const total = Math.round(args.rate * args.seconds);
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  const grant = async (n: number) => {
    const user = `${args.prefix}-${n}`;
    const t0 = performance.now();
    const res = await fetch(`${args.url}/v1/entitlements/grants`, {
      method: "POST",
      headers: { ...args.headers, "content-type": "application/json", "idempotency-key": `k-${user}` },
      body: JSON.stringify({ user_id: user, stock_keeping_unit: "sku-e2e", reason: "bench", purchase_id: `p-${n}` }),
    }).catch(() => undefined);
    if (res?.status === 200) {
      answered.set(user, Date.now());
      grantMs.push(performance.now() - t0);
    }
    await res?.arrayBuffer();
  };
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * args.rate) + 1);
    for (; sent < due; sent++) inFlight.push(grant(sent));
    await Bun.sleep(2);
  }
  await Promise.all(inFlight);
  return { answered, grantMs, sent };
}

export async function measureEndToEnd(
  args: ApiTarget & {
    sql: postgres.Sql;
    rate: number;
    seconds: number;
    prefix: string;
    timeoutMs: number;
  },
): Promise<E2eResult> {
  const { answered, grantMs, sent } = await grantAtRate(args);
  const deadline = Date.now() + args.timeoutMs;
  let rows: { user_id: string; sent_ms: number }[] = [];
  while (Date.now() < deadline) {
    rows = await args.sql<{ user_id: string; sent_ms: number }[]>`
      select user_id, extract(epoch from sent_at)::float8 * 1000 as sent_ms
      from notification.notifications
      where user_id like ${`${args.prefix}-%`} and status = 'SENT'`;
    if (rows.length >= answered.size) break;
    await Bun.sleep(250);
  }
  const delays = rows.flatMap((r) => {
    const at = answered.get(r.user_id);
    return at === undefined ? [] : [r.sent_ms - at];
  });
  const e2e = summarize(delays);
  const grants = summarize(grantMs);
  return {
    rate: args.rate,
    seconds: args.seconds,
    sent,
    ok: answered.size,
    delivered: delays.length,
    grantP50Ms: grants.p50,
    grantP99Ms: grants.p99,
    p50Ms: e2e.p50,
    p95Ms: e2e.p95,
    p99Ms: e2e.p99,
    maxMs: e2e.max,
    stages: await stagesOf(args.sql, args.prefix),
  };
}
