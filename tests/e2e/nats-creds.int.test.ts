// NATS 2.x decentralised authentication, end to end: an operator, an account with JetStream and one user per service,
// minted here with nkeys and signed JWTs (@nats-io/jwt), served by a private nats-server 2.9 in operator mode with a
// memory resolver, over TLS. Each user JWT carries the allow-lists of deploy/nats/least-privilege.conf for its user
// (read from the file), so this path is least-privilege too. Both services, given only NATS_CREDS (and NATS_TLS_CA),
// carry a grant to a SENT notification; Notification's user may neither publish an event nor subscribe to _INBOX.>;
// a user the account never signed, and a client without credentials, are refused; neither service logs the user's
// seed or JWT.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import {
  createAccount,
  createOperator,
  createUser,
  encodeAccount,
  encodeOperator,
  encodeUser,
  fmtCreds,
  type KeyPair,
} from "@nats-io/jwt";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import type postgres from "postgres";
import { createTestCa } from "../support/certificates.ts";
import { postGrant, waitReady, waitSent } from "../support/grant-flow.ts";
import { type DatabaseFixture, openTestDatabase, uniqueName } from "../support/infra.ts";
import { leastPrivilegePermissions } from "../support/least-privilege.ts";
import {
  connectOutcome,
  natsServerBinary,
  type PrivateNats,
  privateNats,
  subscribeOutcome,
} from "../support/nats-server.ts";
import { ENTITLEMENT_MAIN, NOTIFICATION_MAIN, type ServedProcess, serve } from "../support/serve.ts";

setDefaultTimeout(120_000);

const dir = mkdtempSync(join(tmpdir(), "nats-creds-"));
let ca: string;
let broker: PrivateNats;
let f: DatabaseFixture;
let sql: postgres.Sql;
/** Each service's .creds file, and the secrets in it that must never be logged. */
const creds: Record<string, { path: string; seed: string; jwt: string }> = {};
let strangerCreds: Uint8Array;

/** The account's limits: a claim left out is 0 (no connection at all), -1 is unlimited; storage enables JetStream. */
const ACCOUNT_LIMITS = {
  ...{ subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 },
  ...{ mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 },
};

/** The `pub`/`sub` claims of `name`'s user in deploy/nats/least-privilege.conf. */
function permissionsOf(name: string) {
  const permissions = leastPrivilegePermissions()[name];
  if (!permissions) throw new Error(`no user ${name} in least-privilege.conf`);
  return { pub: { allow: permissions.publish }, sub: { allow: permissions.subscribe } };
}

/** A user JWT for `name` signed by `account` with that user's allow-lists, written as a .creds file (JWT + seed). */
async function writeCreds(name: string, account: KeyPair) {
  const user = createUser();
  const jwt = await encodeUser(name, user, account, permissionsOf(name));
  const path = join(dir, `${name}.creds`);
  writeFileSync(path, fmtCreds(jwt, user), { mode: 0o600 });
  return { path, seed: new TextDecoder().decode(user.getSeed()), jwt };
}

/**
 * Operator mode: the operator's JWT, and the account JWTs preloaded in a memory resolver (no account server). JetStream
 * needs a system account, so there is one besides the services' account.
 */
async function operatorConfig(): Promise<string> {
  const operator = createOperator();
  const system = createAccount();
  const account = createAccount();
  const operatorJwt = await encodeOperator("test-operator", operator, { system_account: system.getPublicKey() });
  const systemJwt = await encodeAccount("SYS", system, {}, { signer: operator });
  const accountJwt = await encodeAccount("SERVICES", account, { limits: ACCOUNT_LIMITS }, { signer: operator });
  creds.entitlement = await writeCreds("entitlement", account);
  creds.notification = await writeCreds("notification", account);
  // A user of an account the server was never told about: refused.
  const stranger = createUser();
  strangerCreds = fmtCreds(await encodeUser("stranger", stranger, createAccount()), stranger);
  const path = join(dir, "operator.conf");
  writeFileSync(
    path,
    [
      `operator: ${operatorJwt}`,
      `system_account: ${system.getPublicKey()}`,
      "resolver: MEMORY",
      `resolver_preload: { ${system.getPublicKey()}: ${systemJwt}, ${account.getPublicKey()}: ${accountJwt} }`,
    ].join("\n"),
  );
  return path;
}

beforeAll(async () => {
  if (!natsServerBinary) throw new Error("nats-server is required for this test");
  const authority = await createTestCa(dir);
  ca = authority.ca;
  const server = await authority.server("server");
  broker = privateNats("creds", {
    scheme: "tls",
    args: ["-c", await operatorConfig(), "--tls", "--tlscert", server.cert, "--tlskey", server.key],
  });
  await broker.start();
  f = await openTestDatabase("nats_creds", { service: "notification", poolMax: 2 });
  sql = f.sql;
});

const services: ServedProcess[] = [];

afterAll(async () => {
  for (const s of services) s.child.kill("SIGKILL");
  await f?.close();
  await broker?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

test("a client without credentials, or with a user of an account the server does not know, is refused", async () => {
  const servers = broker.url.replace("tls://", "nats://");
  expect(await connectOutcome({ servers, tls: { caFile: ca } }), "no credentials").toMatch(/authoriz/i);
  const stranger = credsAuthenticator(strangerCreds);
  expect(await connectOutcome({ servers, tls: { caFile: ca }, authenticator: stranger })).toMatch(/authoriz/i);
  const known = credsAuthenticator(await Bun.file(creds.entitlement?.path ?? "").bytes());
  expect(await connectOutcome({ servers, tls: { caFile: ca }, authenticator: known }), "the control").toBe("connected");
});

test("the JWT's allow-lists hold: Notification's user can neither forge an event nor read every inbox", async () => {
  const authenticator = credsAuthenticator(await Bun.file(creds.notification?.path ?? "").bytes());
  const nc = await connect({
    servers: broker.url.replace("tls://", "nats://"),
    tls: { caFile: ca },
    authenticator,
    inboxPrefix: "_INBOX_notification",
  });
  try {
    const forged = await jetstream(nc)
      .publish("entitlement.events", new Uint8Array([1]), { timeout: 5_000 })
      .then(
        () => "published",
        (error: Error) => error.message,
      );
    expect(forged, "publishing an EntitlementEvent").toMatch(/permissions violation/i);
    expect(await subscribeOutcome(nc, "_INBOX.>"), "subscribing to every client's inbox").toMatch(
      /permissions violation/i,
    );
    expect(await subscribeOutcome(nc, "_INBOX_notification.>"), "the control: its own inbox").toBe("subscribed");
  } finally {
    await nc.close();
  }
});

test("both services authenticate with a .creds file: a grant becomes a SENT notification", async () => {
  const env = (service: string) => ({
    DATABASE_URL: f.db.url,
    NATS_URL: broker.url,
    NATS_CREDS: creds[service]?.path ?? "",
    NATS_TLS_CA: ca,
  });
  const entitlement = serve(ENTITLEMENT_MAIN, "entitlement", {
    ...env("entitlement"),
    ENTITLEMENT_AUTH_DISABLED: "true",
  });
  const notification = serve(NOTIFICATION_MAIN, "notification", env("notification"));
  services.push(entitlement, notification);
  const entitlementUrl = `http://127.0.0.1:${await entitlement.port}`;
  const notificationUrl = `http://127.0.0.1:${await notification.port}`;
  await waitReady(notificationUrl, "notification ready (its durables bound as the creds file's user)");
  const user = uniqueName("creds_user");
  const grant = await postGrant(entitlementUrl, { user, sku: "creds.sku", key: `creds-${user}` });
  expect(grant.status).toBe(200);
  await waitSent(sql, user, "the notification SENT through the operator-mode broker");

  for (const s of services) s.child.kill("SIGTERM");
  for (const s of services) expect(await s.child.exited, "drains and exits 0").toBe(0);
  const text = (await Promise.all(services.map((s) => s.output))).join("\n");
  expect(text, "the services logged their NATS connection").toContain("connected to NATS");
  for (const secret of Object.values(creds)) {
    expect(text, "no log line carries the nkey seed").not.toContain(secret.seed);
    expect(text, "no log line carries the user JWT").not.toContain(secret.jwt);
  }
});
