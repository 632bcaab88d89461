// One kill -9 a minute, in rotation: an Entitlement replica, a Notification replica, a NATS node (the leader of the
// events stream every other time), the PostgreSQL primary. A killed service or NATS node is started again a few
// seconds later; for PostgreSQL pg_auto_failover promotes the secondary, the services follow through their
// multi-host URL, and the dead node's keeper is started again once the other node is primary, so it rejoins as a
// secondary.

import postgres from "postgres";
import type { NatsNode } from "../support/nats-cluster.ts";
import { waitUntil } from "../support/wait.ts";
import type { System } from "./system.ts";

export type KillKind = "entitlement" | "notification" | "nats leader" | "nats follower" | "postgres primary";
/** `note`: set when the kill could not be made (it is then not counted). */
export type Kill = { at: number; kind: KillKind; victim: string; note?: string };

const KINDS: KillKind[] = ["entitlement", "notification", "nats leader", "postgres primary"];

const STREAM = "entitlement-events";
const SERVICE_DOWN_MS = 5_000;
const NATS_DOWN_MS = 10_000;
/** How long the rotation's PostgreSQL kill waits for a synchronous secondary (within its half minute). */
const SECONDARY_WAIT_MS = 25_000;
/** How long a killed primary may take to rejoin as a secondary (a rewind or a new base backup of a grown database). */
const REJOIN_MS = 600_000;
const CHECKPOINT_EVERY_MS = 15_000;

export type Chaos = { kills: Kill[]; killNext: () => Promise<Kill>; settle: () => Promise<void> };

export function createChaos(system: System, say: (line: string) => void): Chaos {
  const kills: Kill[] = [];
  const recoveries: Promise<void>[] = [];
  const counts = { entitlement: 0, notification: 0, nats: 0 };
  const recover = (what: string, work: () => Promise<void>) =>
    recoveries.push(work().catch((e: unknown) => say(`recovery of ${what} failed: ${(e as Error).message}`)));
  const steps: (() => Promise<Kill>)[] = [
    () => killService(system.entitlement, counts.entitlement++, "entitlement", recover),
    () => killService(system.notification, counts.notification++, "notification", recover),
    () => killNatsNode(system, counts.nats++ % 2 === 0, recover),
    () => killPrimary(system, say, recover),
  ];
  return {
    kills,
    // A kill that cannot be made (no stream leader or primary found in time) is reported and the run goes on.
    killNext: async () => {
      const step = kills.length % steps.length;
      const kind = step === 2 ? (counts.nats % 2 === 0 ? "nats leader" : "nats follower") : KINDS[step];
      const at = Date.now();
      const kill = await (steps[step] as () => Promise<Kill>)().catch(
        (e: unknown): Kill => ({
          at,
          kind: kind as KillKind,
          victim: "none",
          note: `not made: ${(e as Error).message}`,
        }),
      );
      kills.push(kill);
      return kill;
    },
    settle: async () => {
      await Promise.all(recoveries);
    },
  };
}

type Recover = (what: string, work: () => Promise<void>) => void;

async function killService(
  replicas: System["entitlement"],
  n: number,
  kind: "entitlement" | "notification",
  recover: Recover,
): Promise<Kill> {
  const victim = replicas[n % replicas.length] as System["entitlement"][number];
  const at = Date.now();
  await victim.kill();
  recover(victim.label, async () => {
    await Bun.sleep(SERVICE_DOWN_MS);
    await victim.start();
  });
  return { at, kind, victim: victim.label };
}

async function killNatsNode(system: System, leader: boolean, recover: Recover): Promise<Kill> {
  const cluster = system.nats;
  const led = await waitUntil(() => cluster.leaderOf(STREAM).catch(() => undefined), `a leader of ${STREAM}`);
  const victim = leader ? led : (cluster.nodes.find((n) => n !== led) as NatsNode);
  const at = Date.now();
  await victim.stop("SIGKILL");
  recover(`NATS ${victim.name}`, async () => {
    await Bun.sleep(NATS_DOWN_MS);
    await victim.start();
  });
  return { at, kind: leader ? "nats leader" : "nats follower", victim: victim.name };
}

/**
 * A CHECKPOINT on the new primary while the old one rejoins. pg_autoctl's rewind of the old primary fails here (it
 * runs the crash recovery pg_rewind wants while its own PostgreSQL still holds the folder) and it falls back to
 * pg_basebackup, which waits for a checkpoint spread over up to 4.5 minutes with stock settings; an immediate one
 * asked for meanwhile makes that checkpoint finish at full speed, so the node rejoins before the rotation's next kill
 * of the primary. An operator's action, not a setting: the servers keep their stock configuration.
 */
async function checkpoint(port: number): Promise<void> {
  const sql = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, {
    max: 1,
    connect_timeout: 3,
    onnotice: () => {},
  });
  await sql`checkpoint`.catch(() => {});
  await sql.end({ timeout: 1 }).catch(() => {});
}

async function killPrimary(system: System, say: (line: string) => void, recover: Recover): Promise<Kill> {
  const f = system.formation;
  const victim = await waitUntil(f.primary, "a pg_auto_failover primary", 120_000, 500);
  // Only a primary with a synchronous secondary is killed: with the previous victim not back as a secondary yet there
  // is nothing to fail over to, and the kill would stop the formation instead of testing a failover (not made then).
  await f.waitForSecondary(f.nodes.find((n) => n !== victim) as typeof victim, SECONDARY_WAIT_MS);
  const at = Date.now();
  victim.kill();
  recover(`PostgreSQL ${victim.name}`, async () => {
    const next = await waitUntil(
      async () => ((await f.primary()) !== victim ? await f.primary() : undefined),
      "pg_auto_failover to promote the secondary",
      180_000,
      500,
    );
    say(`pg_auto_failover promoted ${next.name} ${((Date.now() - at) / 1000).toFixed(1)}s after the kill`);
    await victim.start();
    const nudge = setInterval(() => void checkpoint(next.port), CHECKPOINT_EVERY_MS);
    await f.waitForSecondary(victim, REJOIN_MS).finally(() => clearInterval(nudge));
    say(`${victim.name} rejoined as a secondary ${((Date.now() - at) / 1000).toFixed(1)}s after the kill`);
  });
  return { at, kind: "postgres primary", victim: victim.name };
}
