// The faults, one scenario at a time, at random moments of a running load. Each injection tells the runner when its
// fault ended (`ended`), so recovery is measured from there.
import type postgres from "postgres";
import type { Fleet, Service } from "./services.ts";
import { type Infra, need, type Topology } from "./stages.ts";

export type Scale = {
  name: "full" | "quick";
  /** Load before the first fault and after the last one. */
  beforeMs: number;
  afterMs: number;
  kills: number;
  natsStopMs: number;
  natsPauseMs: number;
  /** How long service connections to PostgreSQL are terminated, one every 50-250ms. */
  backendKillsMs: number;
  /** How long a killed NATS cluster node stays down before it is restarted. */
  nodeDownMs: number;
  /** How long one NATS cluster node is paused (SIGSTOP). */
  nodePauseMs: number;
  /** From the primary's death to the promotion: the failure detection of a failover manager. */
  promoteAfterMs: number;
};

export const SCALES: Record<Scale["name"], Scale> = {
  full: {
    name: "full",
    beforeMs: 5_000,
    afterMs: 8_000,
    kills: 3,
    natsStopMs: 10_000,
    natsPauseMs: 5_000,
    backendKillsMs: 10_000,
    nodeDownMs: 8_000,
    nodePauseMs: 10_000,
    promoteAfterMs: 3_000,
  },
  quick: {
    name: "quick",
    beforeMs: 2_500,
    afterMs: 3_000,
    kills: 1,
    natsStopMs: 4_000,
    natsPauseMs: 3_000,
    backendKillsMs: 5_000,
    nodeDownMs: 3_000,
    nodePauseMs: 4_000,
    promoteAfterMs: 1_500,
  },
};

export type DrillContext = {
  fleet: Fleet;
  /** The processes of the scenario's topology. */
  infra: Infra;
  /** The drill's own connection (superuser), for faults inside PostgreSQL. */
  sql: postgres.Sql;
  scale: Scale;
  random: () => number;
  say: (line: string) => void;
  /** Marks the end of one fault (the process is back, the outage is over). */
  ended: () => void;
  problem: (line: string) => void;
};

/** `topology` defaults to `single`; `scales` to both (a scenario of one scale only has a twin in the other). */
export type Scenario = {
  name: string;
  topology?: Topology;
  scales?: Scale["name"][];
  inject: (ctx: DrillContext) => Promise<void>;
};

export const between = (ctx: DrillContext, minMs: number, maxMs: number) =>
  Bun.sleep(Math.round(minMs + ctx.random() * (maxMs - minMs)));

async function killAndRestart(ctx: DrillContext, pick: () => Service): Promise<void> {
  for (let i = 0; i < ctx.scale.kills; i++) {
    if (i > 0) await between(ctx, 1_500, 4_000);
    else await between(ctx, 0, 1_500);
    const victim = pick();
    await victim.signal("SIGKILL");
    ctx.say(`kill -9 ${victim.label}`);
    await between(ctx, 300, 1_500);
    await victim.start();
    ctx.ended();
  }
}

/** Connections cut under the services' feet, the way a failover or a proxy restart does it to one at a time. */
async function terminateBackends(ctx: DrillContext): Promise<void> {
  ctx.say(`pg_terminate_backend of service connections for ${ctx.scale.backendKillsMs / 1000}s`);
  const until = Date.now() + ctx.scale.backendKillsMs;
  let killed = 0;
  while (Date.now() < until) {
    const rows = await ctx.sql`
      select pg_terminate_backend(pid) from pg_stat_activity
      where application_name in ('entitlement', 'notification') and pid <> pg_backend_pid()
      order by random() limit 1`.catch(() => []);
    killed += rows.length;
    await between(ctx, 50, 250);
  }
  ctx.say(`${killed} connections terminated`);
  ctx.ended();
}

async function terminateEverything(ctx: DrillContext): Promise<void> {
  await between(ctx, 0, 1_000);
  ctx.say("SIGTERM to every service at once");
  const codes = await Promise.all(ctx.fleet.all.map((s) => s.signal("SIGTERM", 20_000)));
  ctx.fleet.all.forEach((s, i) => {
    if (codes[i] !== 0) ctx.problem(`${s.label} exited with ${codes[i]} after SIGTERM (expected 0 within 20s)`);
  });
  await Promise.all(ctx.fleet.all.map((s) => s.start()));
  ctx.ended();
}

export const SCENARIOS: Scenario[] = [
  {
    name: "entitlement kill -9",
    inject: (ctx) => killAndRestart(ctx, () => ctx.fleet.replicas[Math.floor(ctx.random() * 2)] as Service),
  },
  { name: "notification kill -9", inject: (ctx) => killAndRestart(ctx, () => ctx.fleet.notification) },
  {
    name: "nats stopped",
    inject: async (ctx) => {
      const nats = need(ctx.infra.nats, "a nats-server");
      await nats.stop();
      ctx.say(`nats-server stopped for ${ctx.scale.natsStopMs / 1000}s`);
      await Bun.sleep(ctx.scale.natsStopMs);
      await nats.start();
      ctx.ended();
    },
  },
  {
    name: "nats paused",
    inject: async (ctx) => {
      const nats = need(ctx.infra.nats, "a nats-server");
      nats.pause();
      ctx.say(`nats-server SIGSTOP for ${ctx.scale.natsPauseMs / 1000}s`);
      await Bun.sleep(ctx.scale.natsPauseMs);
      nats.resume();
      ctx.ended();
    },
  },
  {
    name: "postgres restart",
    inject: async (ctx) => {
      ctx.say("pg_ctl restart -m fast");
      await need(ctx.infra.pg, "a PostgreSQL").restart();
      ctx.ended();
    },
  },
  { name: "postgres backends killed", inject: terminateBackends },
  { name: "sigterm all", inject: terminateEverything },
];
