// Nobody else on the broker: a private nats-server that requires TLS and a password. Both services, configured with
// NATS_URL=tls://…, NATS_USER/NATS_PASSWORD and NATS_TLS_CA, carry a grant to a SENT notification; a client without
// the password, and one without TLS, are refused; no log line of either service carries the password.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type postgres from "postgres";
import { createTestCa } from "../support/certificates.ts";
import { postGrant, waitReady, waitSent } from "../support/grant-flow.ts";
import { type DatabaseFixture, openTestDatabase, uniqueName } from "../support/infra.ts";
import { connectOutcome, natsServerBinary, type PrivateNats, privateNats } from "../support/nats-server.ts";
import { ENTITLEMENT_MAIN, NOTIFICATION_MAIN, serve } from "../support/serve.ts";

setDefaultTimeout(120_000);

const USER = "svc";
const PASSWORD = "nats-Secr3t-that-must-never-be-logged";
const DEBUG_TOKEN = "secure-debug-token-0123456789abcdef";

const dir = mkdtempSync(join(tmpdir(), "secure-nats-"));
let ca: string;
let broker: PrivateNats;
let f: DatabaseFixture;
let sql: postgres.Sql;
const children: Bun.Subprocess[] = [];
const outputs: Promise<string>[] = [];

beforeAll(async () => {
  if (!natsServerBinary) throw new Error("nats-server is required for this test");
  const authority = await createTestCa(dir);
  ca = authority.ca;
  const server = await authority.server("server");
  broker = privateNats("secure", {
    scheme: "tls",
    args: ["--user", USER, "--pass", PASSWORD, "--tls", "--tlscert", server.cert, "--tlskey", server.key],
  });
  await broker.start();
  f = await openTestDatabase("secure_nats", { service: "notification", poolMax: 2 });
  sql = f.sql;
});

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await f?.close();
  await broker?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const secureEnv = () => ({
  NATS_URL: broker.url,
  NATS_USER: USER,
  NATS_PASSWORD: PASSWORD,
  NATS_TLS_CA: ca,
});

/** Starts `main serve` with the test database and keeps its output for the log assertions. */
async function start(main: string, name: string, env: Record<string, string>): Promise<number> {
  const served = serve(main, name, { DATABASE_URL: f.db.url, ...env });
  children.push(served.child);
  outputs.push(served.output);
  return served.port;
}

test("a client without the password, or without TLS, is refused", async () => {
  const refused = connectOutcome;
  const servers = broker.url.replace("tls://", "nats://");
  expect(await refused({ servers, tls: { caFile: ca } }), "no credentials").toMatch(/authorization/i);
  expect(await refused({ servers, tls: { caFile: ca }, user: USER, pass: "wrong" })).toMatch(/authoriz/i);
  expect(await refused({ servers, user: USER, pass: PASSWORD }), "credentials without TLS").not.toBe("connected");
});

test("both services reach the broker with the password over TLS: a grant becomes a SENT notification", async () => {
  const stream = uniqueName("sec_stream").replaceAll("_", "-");
  const durable = uniqueName("sec_durable").replaceAll("_", "-");
  const subject = `${uniqueName("sec")}.events`;
  const advisory = (kind: string) => `$JS.EVENT.ADVISORY.CONSUMER.${kind}.${stream}.${durable}`;
  const entitlementPort = await start(ENTITLEMENT_MAIN, "entitlement", {
    ...secureEnv(),
    ENTITLEMENT_AUTH_DISABLED: "true",
    ENTITLEMENT_NATS_STREAM: stream,
    ENTITLEMENT_NATS_SUBJECT: subject,
  });
  const notificationPort = await start(NOTIFICATION_MAIN, "notification", {
    ...secureEnv(),
    NOTIFICATION_NATS_STREAM: stream,
    NOTIFICATION_NATS_SUBJECT: subject,
    NOTIFICATION_NATS_DURABLE: durable,
    NOTIFICATION_NATS_ADVISORY_SUBJECT: advisory("MAX_DELIVERIES"),
    NOTIFICATION_NATS_ADVISORY_STREAM: `${stream}-maxdel`,
    NOTIFICATION_NATS_ADVISORY_DURABLE: `${durable}-maxdel`,
    NOTIFICATION_NATS_TERMINATED_ADVISORY_SUBJECT: advisory("MSG_TERMINATED"),
    NOTIFICATION_NATS_TERMINATED_ADVISORY_STREAM: `${stream}-term`,
    NOTIFICATION_NATS_TERMINATED_ADVISORY_DURABLE: `${durable}-term`,
    NOTIFICATION_DEBUG_API_ENABLED: "true",
    NOTIFICATION_DEBUG_API_TOKEN: DEBUG_TOKEN,
  });
  const notificationUrl = `http://127.0.0.1:${notificationPort}`;
  await waitReady(notificationUrl, "notification ready (its JetStream consumer bound over TLS)");

  const user = uniqueName("sec_user");
  const grant = await postGrant(`http://127.0.0.1:${entitlementPort}`, { user, sku: "sec.sku", key: `sec-${user}` });
  expect(grant.status).toBe(200);
  await waitSent(sql, user, "the notification to be SENT (published and consumed through the secured broker)");

  for (const child of children) child.kill("SIGTERM");
  for (const child of children) expect(await child.exited, "drains and exits 0").toBe(0);
  const text = (await Promise.all(outputs)).join("\n");
  expect(text, "the services logged their NATS connection").toContain("connected to NATS");
  expect(text, "no log line carries the NATS password").not.toContain(PASSWORD);
});
