// The PostgreSQL failover made by a real failover manager: the primary of a pg_auto_failover formation
// (tests/support/pg-auto-failover.ts) dies with its machine (its keeper, postmaster and every backend killed), the
// monitor notices and promotes the synchronous secondary with its stock timeouts, the services follow through their
// multi-host URL, and the dead node's keeper, started again, rejoins as a secondary. Measured: the time from the kill
// to the first 200 of the API, and to the rejoin.

import { waitUntil } from "../support/wait.ts";
import { send } from "./client.ts";
import { between, type DrillContext } from "./scenarios.ts";
import { need } from "./stages.ts";

const FAILOVER_TIMEOUT_MS = 180_000;

/** Grants of users outside the scenario's prefix (the ledger never counts them), until one is answered 200. */
async function firstOkAfter(ctx: DrillContext, since: number): Promise<number> {
  let n = 0;
  const probe = async () => {
    const replica = ctx.fleet.replicas[n++ % ctx.fleet.replicas.length];
    if (!replica?.running()) return false;
    const user = `failover-probe-${crypto.randomUUID()}`;
    const body = { user_id: user, stock_keeping_unit: "sku-probe", reason: "drill", purchase_id: "probe" };
    const { answer } = await send(replica.url, ctx.fleet.token, { action: "grants", key: user, body }, 5_000);
    return answer?.status === 200 ? Date.now() - since : false;
  };
  return waitUntil(probe, "a 200 from the API after the primary's death", FAILOVER_TIMEOUT_MS, 250);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

export async function failOverByManager(ctx: DrillContext): Promise<void> {
  const formation = need(ctx.infra.formation, "a pg_auto_failover formation");
  await between(ctx, 0, 1_500);
  const primary = await waitUntil(formation.primary, "a pg_auto_failover primary", 60_000, 250);
  primary.kill();
  const killedAt = Date.now();
  ctx.say(`kill -9 ${primary.name} (port ${primary.port}): its keeper, postmaster and every backend`);
  ctx.say(`first 200 ${seconds(await firstOkAfter(ctx, killedAt))} after the kill`);
  ctx.ended();
  const promoted = await waitUntil(
    async () => {
      const now = await formation.primary();
      return now !== primary ? now : undefined;
    },
    "pg_auto_failover to have another primary",
    FAILOVER_TIMEOUT_MS,
    500,
  );
  await primary.start();
  await formation.waitForSecondary(primary, FAILOVER_TIMEOUT_MS);
  ctx.say(
    `${promoted.name} primary; ${primary.name} rejoined as a secondary ${seconds(Date.now() - killedAt)} after the kill`,
  );
  await checkReadsFrom(ctx, promoted.port, { reach: "the new primary", not: promoted.name });
}

/**
 * Every check after a failover reads through the multi-host URL: it must be answered by `port`, the new primary, out of
 * recovery (`names.reach` names it in the wait, `names.not` in the problem).
 */
export async function checkReadsFrom(
  ctx: DrillContext,
  port: number,
  names: { reach: string; not: string },
): Promise<void> {
  const where = await waitUntil(
    () =>
      ctx.sql<{ port: number; standby: boolean }[]>`
        select inet_server_port() as port, pg_is_in_recovery() as standby`.then(
        (rows) => rows[0],
        () => undefined,
      ),
    `the drill's connection to reach ${names.reach}`,
    30_000,
    250,
  );
  if (where.port !== port || where.standby)
    ctx.problem(`the drill's checks would read port ${where.port} (in recovery: ${where.standby}), not ${names.not}`);
}
