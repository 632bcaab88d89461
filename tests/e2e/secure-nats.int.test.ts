// Nobody else on the broker: a private nats-server that requires TLS and a password. Both services, configured with
// NATS_URL=tls://…, NATS_USER/NATS_PASSWORD and NATS_TLS_CA, carry a grant to a SENT notification; a client without
// the password, and one without TLS, are refused; no log line of either service carries the password.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { createTestDatabase, type TestDatabase, uniqueName } from "../support/infra.ts";
import { natsServerBinary, type PrivateNats, privateNats } from "../support/nats-server.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(120_000);

const ENTITLEMENT = new URL("../../src/entitlement/main.ts", import.meta.url).pathname;
const NOTIFICATION = new URL("../../src/notification/main.ts", import.meta.url).pathname;
const USER = "svc";
const PASSWORD = "nats-Secr3t-that-must-never-be-logged";
const DEBUG_TOKEN = "secure-debug-token-0123456789abcdef";

const dir = mkdtempSync(join(tmpdir(), "secure-nats-"));
const pem = (name: string) => join(dir, name);
let broker: PrivateNats;
let db: TestDatabase;
let sql: postgres.Sql;
const children: Bun.Subprocess[] = [];
const logs: string[] = [];

/** A throwaway CA and a server certificate for 127.0.0.1 signed by it (EC keys: fast to make). */
async function makeCertificates(): Promise<void> {
  const openssl = async (...args: string[]) => {
    const run = Bun.spawn(["openssl", ...args], { cwd: dir, stdout: "ignore", stderr: "pipe" });
    if ((await run.exited) !== 0) throw new Error(`openssl ${args[0]}: ${await new Response(run.stderr).text()}`);
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await openssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=test-ca");
  await openssl("req", ...ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1");
  writeFileSync(pem("san.ext"), "subjectAltName=IP:127.0.0.1\n");
  await openssl(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "1",
    "-extfile",
    "san.ext",
  );
}

beforeAll(async () => {
  if (!natsServerBinary) throw new Error("nats-server is required for this test");
  await makeCertificates();
  broker = privateNats("secure", {
    scheme: "tls",
    args: ["--user", USER, "--pass", PASSWORD, "--tls", "--tlscert", pem("server.pem"), "--tlskey", pem("server.key")],
  });
  await broker.start();
  db = await createTestDatabase("secure_nats");
  sql = postgres(db.url, { max: 2, onnotice: () => {} });
});

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await sql?.end();
  await db?.drop();
  await broker?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const secureEnv = () => ({
  NATS_URL: broker.url,
  NATS_USER: USER,
  NATS_PASSWORD: PASSWORD,
  NATS_TLS_CA: pem("ca.pem"),
});

/** Starts `main serve`, keeps every stdout line in `logs`, and resolves with its HTTP port once it listens. */
async function start(main: string, name: string, env: Record<string, string>): Promise<number> {
  const child = Bun.spawn(["bun", main, "serve"], {
    env: {
      PATH: process.env.PATH ?? "",
      DATABASE_URL: db.url,
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "debug",
      ...env,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  children.push(child);
  const port = Promise.withResolvers<number>();
  void (async () => {
    let text = "";
    for await (const chunk of child.stdout) {
      text += new TextDecoder().decode(chunk);
      const match = new RegExp(`"port":(\\d+),"msg":"${name} listening"`).exec(text);
      if (match) port.resolve(Number(match[1]));
    }
    logs.push(text, await new Response(child.stderr).text());
    port.reject(new Error(`${name} exited before listening:\n${text}`));
  })();
  return port.promise;
}

test("a client without the password, or without TLS, is refused", async () => {
  const refused = async (options: Parameters<typeof connect>[0]) =>
    connect({ timeout: 5_000, ...options }).then(
      async (nc) => {
        await nc.close();
        return "connected";
      },
      (error: Error) => error.message,
    );
  const servers = broker.url.replace("tls://", "nats://");
  expect(await refused({ servers, tls: { caFile: pem("ca.pem") } }), "no credentials").toMatch(/authorization/i);
  expect(await refused({ servers, tls: { caFile: pem("ca.pem") }, user: USER, pass: "wrong" })).toMatch(/authoriz/i);
  expect(await refused({ servers, user: USER, pass: PASSWORD }), "credentials without TLS").not.toBe("connected");
});

test("both services reach the broker with the password over TLS: a grant becomes a SENT notification", async () => {
  const stream = uniqueName("sec_stream").replaceAll("_", "-");
  const durable = uniqueName("sec_durable").replaceAll("_", "-");
  const subject = `${uniqueName("sec")}.events`;
  const advisory = (kind: string) => `$JS.EVENT.ADVISORY.CONSUMER.${kind}.${stream}.${durable}`;
  const entitlementPort = await start(ENTITLEMENT, "entitlement", {
    ...secureEnv(),
    ENTITLEMENT_AUTH_DISABLED: "true",
    ENTITLEMENT_NATS_STREAM: stream,
    ENTITLEMENT_NATS_SUBJECT: subject,
  });
  const notificationPort = await start(NOTIFICATION, "notification", {
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
  await waitUntil(
    async () => (await fetch(`${notificationUrl}/readyz`).catch(() => undefined))?.status === 200,
    "notification ready (its JetStream consumer bound over TLS)",
    60_000,
  );

  const user = uniqueName("sec_user");
  const grant = await fetch(`http://127.0.0.1:${entitlementPort}/v1/entitlements/grants`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": `sec-${user}` },
    body: JSON.stringify({ user_id: user, stock_keeping_unit: "sec.sku", reason: "purchase", purchase_id: "p-1" }),
  });
  expect(grant.status).toBe(200);
  await waitUntil(
    async () => {
      const rows = await sql`select status from notification.notifications where user_id = ${user}`;
      return rows.length === 1 && rows[0]?.status === "SENT";
    },
    "the notification to be SENT (published and consumed through the secured broker)",
    60_000,
  );

  for (const child of children) child.kill("SIGTERM");
  for (const child of children) expect(await child.exited, "drains and exits 0").toBe(0);
  await waitUntil(() => logs.length === 2 * children.length, "every log captured", 10_000);
  const text = logs.join("\n");
  expect(text, "the services logged their NATS connection").toContain("connected to NATS");
  expect(text, "no log line carries the NATS password").not.toContain(PASSWORD);
});
