// Everything the soak runs on, in its own folder on free loopback ports, with stock settings: a pg_auto_failover
// formation (monitor, primary, synchronous secondary), a 3-node NATS cluster, the players' OpenID provider, two
// webhook receivers, then two Entitlement and two Notification replicas of the built executables. The machine's
// shared PostgreSQL and NATS are never touched.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { newToken, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { buildService, defaultTarget } from "../../tools/build.ts";
import { startTestIdp, type TestIdp } from "../support/idp.ts";
import { type NatsCluster, startNatsCluster } from "../support/nats-cluster.ts";
import { type Formation, startFormation } from "../support/pg-auto-failover.ts";
import { type Receivers, registerEndpoints, startReceivers } from "./receivers.ts";
import { SEND_TYPE } from "./sends.ts";
import { createSoakService, type SoakService } from "./services.ts";

const AUDIENCE = "https://players.soak";

export type System = {
  formation: Formation;
  nats: NatsCluster;
  receivers: Receivers;
  entitlement: SoakService[];
  notification: SoakService[];
  /** Entitlement's API token (read+write). */
  token: string;
  /** Notification's token of the send API (notify). */
  notifyToken: string;
  /** A player's access token, valid for a day. */
  tokenFor: (userId: string) => Promise<string>;
  /** The soak's own connection, through the multi-host URL as the services'. */
  sql: postgres.Sql;
  /** Synchronous: kills whatever still runs (also from the exit handler). */
  kill: () => void;
};

type Parts = Partial<Omit<System, "kill" | "tokenFor" | "notifyToken">> & { idp?: TestIdp };

function killParts(p: Parts): void {
  for (const s of [...(p.entitlement ?? []), ...(p.notification ?? [])]) void s.kill();
  p.receivers?.stop();
  p.nats?.dispose(true);
  p.formation?.dispose();
  void p.idp?.close();
}

function serviceEnvs(databaseUrl: string, natsUrl: string, issuer: string) {
  const token = newToken();
  const adminToken = newToken();
  const notifyToken = newToken();
  const common = { DATABASE_URL: databaseUrl, NATS_URL: natsUrl, LOG_LEVEL: "info" };
  const entitlement = {
    ...common,
    ENTITLEMENT_NATS_STREAM_REPLICAS: "3",
    ENTITLEMENT_AUTH_TOKENS: tokenEntryLine("soak", token, "read+write"),
  };
  const notification = {
    ...common,
    NOTIFICATION_NATS_STREAM_REPLICAS: "3",
    NOTIFICATION_PLAYER_JWT_ISSUER: issuer,
    NOTIFICATION_PLAYER_JWT_AUDIENCE: AUDIENCE,
    NOTIFICATION_AUTH_TOKENS: [
      tokenEntryLine("soak-admin", adminToken, "read+write"),
      tokenEntryLine("soak-sender", notifyToken, "notify"),
    ].join(","),
    NOTIFICATION_ENDPOINT_SECRET_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex"),
    // The receivers listen on loopback, which the endpoints' address guard refuses otherwise.
    NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
  };
  return { token, adminToken, notifyToken, entitlement, notification };
}

/**
 * A free port can be taken by another process between freePort() and the server's bind (on a shared machine): a
 * formation that fails to start is tried again, up to three times, each in a new folder on new ports.
 */
async function formationOnFreePorts(root: string, say: (line: string) => void): Promise<Formation> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startFormation(join(root, attempt === 1 ? "pg" : `pg-${attempt}`));
    } catch (error) {
      if (attempt === 3) throw error;
      say(`the formation did not start (${(error as Error).message}); again on new ports`);
    }
  }
}

/** Builds both executables into `root`/dist and starts everything; on a failure what started is killed again. */
export async function startSystem(root: string, say: (line: string) => void): Promise<System> {
  const parts: Parts = {};
  const logDir = join(root, "logs");
  mkdirSync(logDir, { recursive: true });
  try {
    const dist = join(root, "dist");
    const target = defaultTarget();
    const [entBin, notBin] = await Promise.all(
      (["entitlement", "notification"] as const).map((s) => buildService(s, { target, outdir: dist })),
    );
    say("built both executables; creating the pg_auto_failover formation (monitor, primary, secondary)");
    parts.formation = await formationOnFreePorts(root, say);
    parts.nats = await startNatsCluster({ root: join(root, "nats"), logDir });
    parts.idp = await startTestIdp();
    parts.receivers = startReceivers(SEND_TYPE);
    const envs = serviceEnvs(parts.formation.url, parts.nats.url, parts.idp.issuer);
    const make = (bin: string, env: Record<string, string>, name: string) => (n: number) =>
      createSoakService(`${name}-${n}`, bin, env, logDir);
    parts.entitlement = [1, 2].map(make(entBin as string, envs.entitlement, "entitlement"));
    parts.notification = [1, 2].map(make(notBin as string, envs.notification, "notification"));
    // One at a time: the first of each migrates, the others find the schema in place.
    for (const s of [...parts.entitlement, ...parts.notification]) await s.start();
    await registerEndpoints(parts.notification[0]?.url ?? "", envs.adminToken, parts.receivers.all);
    parts.sql = postgres(parts.formation.url, { max: 4, connect_timeout: 5, onnotice: () => {} });
    return assemble(parts, envs.token, envs.notifyToken);
  } catch (error) {
    killParts(parts);
    throw error;
  }
}

function assemble(parts: Parts, token: string, notifyToken: string): System {
  const idp = parts.idp as TestIdp;
  const exp = Math.floor(Date.now() / 1000) + 86_400;
  return {
    ...(parts as Omit<System, "kill" | "tokenFor" | "token" | "notifyToken">),
    token,
    notifyToken,
    tokenFor: (sub) => idp.forge({ iss: idp.issuer, aud: AUDIENCE, sub, exp, iat: exp - 86_400 }),
    kill: () => killParts(parts),
  };
}
