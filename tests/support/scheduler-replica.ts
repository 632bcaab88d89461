// An Entitlement replica for the scheduler's crash tests: `bun src/entitlement/main.ts serve` on `databaseUrl` with NATS,
// authentication and retention off and a 2 s lease, named `hostname` (its locked_by is workerId(hostname, pid)), so a
// test can kill -9 it.
import type { Sql } from "../../src/shared/db.ts";
import { workerId } from "../../src/shared/runtime.ts";
import { waitUntil } from "./wait.ts";

const MAIN = new URL("../../src/entitlement/main.ts", import.meta.url).pathname;

/** `slow`: batches of 10 one at a time, so a kill surely lands while due work is being executed. */
export function serveSchedulerReplica(databaseUrl: string, hostname: string, slow: boolean): Bun.Subprocess {
  return Bun.spawn(["bun", MAIN, "serve"], {
    env: {
      PATH: process.env.PATH ?? "",
      DATABASE_URL: databaseUrl,
      HOST: "127.0.0.1",
      PORT: "0",
      HOSTNAME: hostname,
      LOG_LEVEL: "warn",
      NATS_ENABLED: "false",
      ENTITLEMENT_AUTH_DISABLED: "true",
      ENTITLEMENT_RETENTION_ENABLED: "false",
      ENTITLEMENT_SCHEDULER_LEASE: "2s",
      ENTITLEMENT_SCHEDULER_BATCH_SIZE: slow ? "10" : "100",
      ENTITLEMENT_SCHEDULER_CONCURRENCY: slow ? "1" : "4",
    },
    stdout: "ignore",
    stderr: "inherit",
  });
}

/**
 * Kills the replica `hostname` with SIGKILL at a moment it holds claims of `table`, so the test proves they are taken
 * over. Its PROCESSING rows (locked_by is the service's workerId) are counted every 5 ms while it runs at full speed;
 * once it holds some it is stopped (SIGSTOP) and counted again, and killed there if it still holds any, else
 * continued. Racing a poll against the work instead missed on a fast machine: two replicas finished every expiry
 * between two polls. Returns the count of claims it died holding.
 */
export async function killHoldingClaims(
  replica: Bun.Subprocess,
  claims: { sql: Sql; table: "entitlement_expiries" | "point_reservations"; hostname: string },
  timeoutMs = 60_000,
): Promise<number> {
  const lockedBy = workerId(claims.hostname, replica.pid);
  const held = async () => {
    const [row] = await claims.sql<{ n: number }[]>`
      select count(*)::int as n from ${claims.sql(claims.table)} where status = 'PROCESSING' and locked_by = ${lockedBy}`;
    return row?.n ?? 0;
  };
  try {
    return await waitUntil(
      async () => {
        if ((await held()) === 0) return false;
        replica.kill("SIGSTOP");
        await Bun.sleep(50); // a statement it sent before the stop is over by then
        const count = await held();
        if (count > 0) return count;
        replica.kill("SIGCONT");
        return false;
      },
      "the replica to hold claims",
      timeoutMs,
      5,
    );
  } finally {
    replica.kill("SIGKILL");
    await replica.exited;
  }
}
