// An Entitlement replica for the scheduler's crash tests: `bun src/entitlement/main.ts serve` on `databaseUrl` with NATS,
// authentication and retention off and a 2 s lease, named `hostname` (its locked_by), so a test can kill -9 it.
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
