// The faults of a system past one machine (docs/failure-modes.md, the last guarantee): a 3-node NATS cluster with the streams at three
// replicas loses its stream leader, then a follower, then has one node paused; a PostgreSQL primary with a synchronous
// standby dies and, in the quick drill, the drill itself plays the failover manager and promotes the standby (the old
// primary is never started again: its data is what a dead machine leaves behind); at full scale pg_auto_failover
// does it (scenario-pg-auto-failover.ts).
import type { NatsCluster, NatsNode } from "../support/nats-cluster.ts";
import { waitUntil } from "../support/wait.ts";
import { checkReadsFrom, failOverByManager } from "./scenario-pg-auto-failover.ts";
import { between, type DrillContext, type Scenario } from "./scenarios.ts";
import { need } from "./stages.ts";

/** The stream the relay publishes to and Notification reads (the services' default name). */
const STREAM = "entitlement-events";

async function leaderOf(cluster: NatsCluster): Promise<NatsNode> {
  return waitUntil(() => cluster.leaderOf(STREAM).catch(() => undefined), `a leader of ${STREAM}`, 30_000, 250);
}

/** kill -9 one node, keep it down for nodeDownMs under load, start it again (it catches up from the others). */
async function killNode(ctx: DrillContext, pick: (cluster: NatsCluster, leader: NatsNode) => NatsNode) {
  const cluster = need(ctx.infra.natsCluster, "a NATS cluster");
  await between(ctx, 0, 1_500);
  const leader = await leaderOf(cluster);
  const victim = pick(cluster, leader);
  await victim.stop("SIGKILL");
  const role = victim === leader ? `the leader of ${STREAM}` : `a follower (${STREAM} led by ${leader.name})`;
  ctx.say(`kill -9 ${victim.name}, ${role}`);
  ctx.ended();
  await Bun.sleep(ctx.scale.nodeDownMs);
  await victim.start();
  ctx.say(`${victim.name} restarted; ${STREAM} led by ${(await leaderOf(cluster)).name}`);
  ctx.ended();
}

async function pauseLeader(ctx: DrillContext): Promise<void> {
  const cluster = need(ctx.infra.natsCluster, "a NATS cluster");
  await between(ctx, 0, 1_500);
  const leader = await leaderOf(cluster);
  leader.pause();
  ctx.say(`SIGSTOP ${leader.name} (leader of ${STREAM}) for ${ctx.scale.nodePauseMs / 1000}s`);
  await Bun.sleep(ctx.scale.nodePauseMs);
  leader.resume();
  ctx.say(`SIGCONT ${leader.name}; ${STREAM} led by ${(await leaderOf(cluster)).name}`);
  ctx.ended();
}

async function failOver(ctx: DrillContext): Promise<void> {
  const pair = need(ctx.infra.pgPair, "a PostgreSQL primary with a standby");
  await between(ctx, 0, 1_500);
  pair.killPrimary();
  ctx.say(`kill -9 the primary (port ${pair.primary.port}: postmaster and every backend)`);
  await Bun.sleep(ctx.scale.promoteAfterMs);
  await pair.promote();
  ctx.say(`standby promoted (port ${pair.standby.port}); the old primary stays down`);
  ctx.ended();
  // Every check after this reads through the multi-host URL too: it must be answered by the promoted standby.
  const standby = "the promoted standby";
  await checkReadsFrom(ctx, pair.standby.port, { reach: standby, not: standby });
}

export const HA_SCENARIOS: Scenario[] = [
  {
    name: "nats leader kill -9 (R3)",
    topology: "nats-cluster",
    inject: (ctx) => killNode(ctx, (_, leader) => leader),
  },
  {
    name: "nats follower kill -9 (R3)",
    topology: "nats-cluster",
    inject: (ctx) => killNode(ctx, (cluster, leader) => cluster.nodes.find((n) => n !== leader) as NatsNode),
  },
  { name: "nats leader paused (R3)", topology: "nats-cluster", inject: pauseLeader },
  // The drill's own promotion 1.5 s after the kill: the quick drill's (CI's) stand-in for the formation below, whose
  // stock detection takes about 50 s on a loaded 2-core machine.
  { name: "postgres failover", topology: "pg-standby", scales: ["quick"], inject: failOver },
  {
    name: "postgres failover (pg_auto_failover)",
    topology: "pg-auto-failover",
    scales: ["full"],
    inject: failOverByManager,
  },
];
