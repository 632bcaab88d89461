// PostgreSQL over verified TLS (ADR-22): a private cluster with ssl = on and a pg_hba.conf of `hostssl` lines only (no
// `host` line, so plain text is refused), with a CA, server and client certificates made here with openssl. The URL
// parameters sslmode, sslrootcert, sslcert and sslkey are what the services and their tools are configured with.
import { afterAll, beforeAll, expect, setDefaultTimeout } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_CONFIG } from "../../src/shared/config.ts";
import { createSql } from "../../src/shared/db.ts";
import { type CertificatePair, createTestCa, type TestCa } from "../support/certificates.ts";
import {
  type PostgresNode,
  presentCertificate,
  startPostgresNode,
  tlsClusterMissing,
  tlsSettings,
} from "../support/postgres-node.ts";
import { runCommand } from "../support/process.ts";
import { testRequiring } from "../support/required.ts";
import { ENTITLEMENT_MAIN, serve } from "../support/serve.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(120_000);

const missing = tlsClusterMissing();
const test = testRequiring(missing);

/** The migration role, which logs in with its client certificate (CN = role name). */
const MIGRATOR = "migrator";
/** The runtime login, DML only through its group role (docs/security.md). */
const RUNTIME = "entitlement_app";
const HBA = `hostssl all ${MIGRATOR} 127.0.0.1/32 cert\nhostssl all all 127.0.0.1/32 trust\n`;

let dir: string;
let pg: PostgresNode | undefined;
let ca: TestCa;
let otherCa: TestCa;
let client: CertificatePair;
let stranger: CertificatePair;

const url = (user: string, params: Record<string, string>) =>
  `postgres://${user}@127.0.0.1:${pg?.port}/postgres?${new URLSearchParams(params)}`;
const verifyFull = (params: Record<string, string> = {}) =>
  url("postgres", { sslmode: "verify-full", sslrootcert: ca.ca, ...params });
const asMigrator = (cert: CertificatePair) =>
  url(MIGRATOR, { sslmode: "verify-full", sslrootcert: ca.ca, sslcert: cert.cert, sslkey: cert.key });
const open = (u: string) => createSql({ url: u, schema: "public", max: 1, applicationName: "tls-test" });

/** What the server saw of a connection made with `u`: the role, TLS or not, the client certificate's subject. */
async function session(u: string) {
  const sql = open(u);
  try {
    const [row] = await sql`
      select current_user as "user", ssl, client_dn as "clientDn" from pg_stat_ssl where pid = pg_backend_pid()`;
    return row;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** How a connection made with `u` fails: its code and message, or "connected". */
async function refusal(u: string): Promise<string> {
  const sql = open(u);
  try {
    await sql`select 1`;
    return "connected";
  } catch (error) {
    return `${(error as { code?: string }).code}: ${(error as Error).message}`;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

beforeAll(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), "pg-tls-"));
  mkdirSync(join(dir, "other"));
  ca = await createTestCa(dir);
  otherCa = await createTestCa(join(dir, "other"), "other-ca");
  const server = await ca.server("server", "IP:127.0.0.1,DNS:localhost");
  const elsewhere = await ca.server("elsewhere", "DNS:db.example.org");
  client = await ca.client(MIGRATOR);
  stranger = await otherCa.client(MIGRATOR);
  const file = (path: string, mode = 0o644) => ({ text: readFileSync(path, "utf8"), mode });
  pg = await startPostgresNode({
    label: "pg-tls",
    files: {
      "server.crt": file(server.cert),
      "server.key": file(server.key, 0o600),
      "elsewhere.crt": file(elsewhere.cert),
      "elsewhere.key": file(elsewhere.key, 0o600),
      "ca.crt": file(ca.ca),
      "pg_hba.conf": { text: HBA, mode: 0o600 },
      // Not on the command line, where ALTER SYSTEM could not change the certificate later.
      "postgresql.auto.conf": { text: tlsSettings({ clientCa: true }), mode: 0o600 },
    },
  });
  const admin = open(verifyFull());
  // A plain owner, as docs/security.md has it: the runtime group role exists before its migration (ADR-23).
  await admin.unsafe(`create role ${MIGRATOR} login`);
  await admin.unsafe(`grant create on database postgres to ${MIGRATOR}`);
  await admin.unsafe("create role entitlement_runtime nologin");
  await admin.unsafe(`create role ${RUNTIME} login in role entitlement_runtime`);
  await admin.end();
}, 120_000);

afterAll(() => {
  pg?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("verify-full with the right CA: serve migrates as a client-certificate owner and serves a grant as its runtime role, over TLS", async () => {
  const { child, port } = serve(ENTITLEMENT_MAIN, "entitlement", {
    DATABASE_URL: url(RUNTIME, { sslmode: "verify-full", sslrootcert: ca.ca }),
    DATABASE_MIGRATION_URL: asMigrator(client),
    NATS_ENABLED: "false",
    ENTITLEMENT_AUTH_DISABLED: "true",
  });
  try {
    const base = `http://127.0.0.1:${await port}`;
    const grant = await fetch(`${base}/v1/entitlements/grants`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "tls-1" },
      body: JSON.stringify({ user_id: "tls-user", stock_keeping_unit: "sku", reason: "purchase", purchase_id: "p-1" }),
    });
    expect(grant.status, await grant.text()).toBe(200);
    const sql = open(verifyFull());
    try {
      const [row] = await sql`
        select e.status,
          (select tableowner from pg_tables where schemaname = 'entitlement' and tablename = 'entitlements') as owner,
          (select string_agg(distinct a.usename, ',') from pg_stat_activity a
            where a.application_name = 'entitlement') as served_by,
          (select bool_and(s.ssl) from pg_stat_activity a join pg_stat_ssl s using (pid)
            where a.application_name = 'entitlement') as pool_over_tls
        from entitlement.entitlements e where e.user_id = 'tls-user'`;
      expect(row, "migrated by the certificate's role, served by a pool whose every connection is TLS").toEqual({
        status: "ACTIVE",
        owner: MIGRATOR,
        served_by: RUNTIME,
        pool_over_tls: true,
      });
    } finally {
      await sql.end();
    }
  } finally {
    child.kill("SIGTERM");
    await child.exited;
  }
  const ops = await runCommand([process.execPath, ENTITLEMENT_MAIN, "outbox", "stats"], {
    env: { PATH: process.env.PATH ?? "", DATABASE_URL: verifyFull() },
  });
  expect(ops.code, `an operator command connects the same way: ${ops.stderr}`).toBe(0);
});

test("a server certificate that does not chain to sslrootcert is refused, and says why", async () => {
  const untrusted = /^SELF_SIGNED_CERT_IN_CHAIN: self signed certificate in certificate chain$/;
  expect(await refusal(verifyFull({ sslrootcert: otherCa.ca }))).toMatch(untrusted);
  expect(await refusal(verifyFull({ sslrootcert: "system" })), "the runtime's roots do not know the test CA").toMatch(
    untrusted,
  );
  const env = { PATH: process.env.PATH ?? "" };
  const wrongCa = await runCommand([process.execPath, ENTITLEMENT_MAIN, "migrate"], {
    env: { ...env, DATABASE_URL: verifyFull({ sslrootcert: otherCa.ca }) },
  });
  expect(wrongCa.code, "migrate fails").toBe(1);
  expect(`${wrongCa.stdout}${wrongCa.stderr}`, "and the log says it was the certificate").toContain(
    "self signed certificate in certificate chain",
  );
  const noRoot = await runCommand([process.execPath, ENTITLEMENT_MAIN, "migrate"], {
    env: { ...env, DATABASE_URL: url("postgres", { sslmode: "verify-full" }) },
  });
  expect(noRoot.code, "verify-full without sslrootcert is a configuration error").toBe(EXIT_CONFIG);
  expect(noRoot.stderr).toContain("DATABASE_URL=");
  expect(noRoot.stderr).toContain("sslmode=verify-full needs sslrootcert");
});

test("hostssl only: sslmode=disable is refused by the server; the default, prefer, takes TLS", async () => {
  expect(await refusal(url("postgres", { sslmode: "disable" }))).toMatch(
    /^28000: .*no pg_hba.conf entry.*no encryption/,
  );
  expect(await session(url("postgres", {}))).toMatchObject({ ssl: true });
  expect(await session(url("postgres", { sslmode: "require" }))).toMatchObject({ ssl: true });
});

test("a certificate for another name: verify-full refuses it, verify-ca (and require with sslrootcert) accept it", async () => {
  const admin = open(verifyFull());
  const serve = (name: string) => presentCertificate(admin, name);
  try {
    await serve("elsewhere");
    const refused = await waitUntil(async () => {
      const outcome = await refusal(verifyFull());
      return outcome === "connected" ? undefined : outcome;
    }, "the server to present the certificate for db.example.org");
    expect(refused).toMatch(/^ERR_TLS_CERT_ALTNAME_INVALID: .*127\.0\.0\.1/);
    expect(await session(url("postgres", { sslmode: "verify-ca", sslrootcert: ca.ca }))).toMatchObject({ ssl: true });
    expect(await session(url("postgres", { sslmode: "require", sslrootcert: ca.ca }))).toMatchObject({ ssl: true });
    const chain = await refusal(url("postgres", { sslmode: "verify-ca", sslrootcert: otherCa.ca }));
    expect(chain, "verify-ca still checks the chain").toStartWith("SELF_SIGNED_CERT_IN_CHAIN");
  } finally {
    await serve("server");
    await admin.end();
  }
  await waitUntil(async () => (await refusal(verifyFull())) === "connected", "the right certificate again");
});

test("client certificate authentication: sslcert and sslkey log in as the certificate's name, nothing else does", async () => {
  expect(await session(asMigrator(client))).toEqual({ user: MIGRATOR, ssl: true, clientDn: `/CN=${MIGRATOR}` });
  const without = url(MIGRATOR, { sslmode: "verify-full", sslrootcert: ca.ca });
  expect(await refusal(without), "no client certificate").toBe("28000: connection requires a valid client certificate");
  expect(await refusal(asMigrator(stranger)), "a certificate from a CA the server does not trust").toContain(
    "TLSV1_ALERT_UNKNOWN_CA",
  );
});
