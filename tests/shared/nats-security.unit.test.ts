// NATS credentials and TLS settings: every combination that cannot mean anything stops the process (exit 78 via
// ConfigError) naming the variables and never the secret; the valid ones become the client's connect options.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAccount, createUser, encodeUser, fmtCreds } from "@nats-io/jwt";
import { SECRET_VARIABLES as ENTITLEMENT_SECRETS, loadEntitlementConfig } from "../../src/entitlement/config.ts";
import { loadNotificationConfig, SECRET_VARIABLES as NOTIFICATION_SECRETS } from "../../src/notification/config.ts";
import { natsServers } from "../../src/shared/nats-security.ts";
import { configProblems } from "../support/captures.ts";
import { createTestCa } from "../support/certificates.ts";

const PASSWORD = "nats-Passw0rd-never-printed";
const TOKEN = "nats-T0ken-never-printed";
const dir = mkdtempSync(join(tmpdir(), "nats-security-"));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
// Real PEM files (openssl): configuration parses them at boot and checks that the key is the certificate's.
const testCa = await createTestCa(dir);
const ca = testCa.ca;
const { cert, key } = await testCa.client("svc");
const other = await testCa.client("other");
const notPem = file("notes.txt", "not a certificate");
// A real .creds file (a user JWT signed by an account, then the user's nkey seed), minted here: configuration parses
// it and signs with its seed at boot, as the client will when connecting.
const account = createAccount();
const user = createUser();
const creds = file("user.creds", new TextDecoder().decode(fmtCreds(await encodeUser("svc", user, account), user)));
const seed = new TextDecoder().decode(user.getSeed());
// The same layout with one character of the seed changed (its checksum no longer matches), and a file that is no
// .creds file at all.
const typo = `${seed.slice(0, 20)}${seed[20] === "A" ? "B" : "A"}${seed.slice(21)}`;
const brokenSeed = file("broken.creds", readFileSync(creds, "utf8").replace(seed, typo));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const noAuth = { ENTITLEMENT_AUTH_DISABLED: "true" };
const loaders = {
  entitlement: (env: Record<string, string>) => loadEntitlementConfig({ ...noAuth, ...env }).nats.security,
  notification: (env: Record<string, string>) => loadNotificationConfig(env).nats.security,
};
/** Each service's own inbox prefix when NATS_INBOX_PREFIX is unset (deploy/nats/least-privilege.conf expects them). */
const DEFAULT_INBOX = { entitlement: "_INBOX_entitlement", notification: "_INBOX_notification" };

const problemsOf = (fn: () => unknown): string => configProblems(fn).join("\n");

for (const [service, load] of Object.entries(loaders) as [keyof typeof loaders, (typeof loaders)["entitlement"]][]) {
  describe(`${service}: NATS credentials and TLS`, () => {
    const inboxPrefix = DEFAULT_INBOX[service];
    test("nothing set: no credentials, no TLS, the service's own inbox prefix", () => {
      expect(load({})).toEqual({ inboxPrefix });
    });
    test("user and password, a token, a creds file each become connect options", () => {
      expect(load({ NATS_USER: "svc", NATS_PASSWORD: PASSWORD })).toEqual({ inboxPrefix, user: "svc", pass: PASSWORD });
      expect(load({ NATS_TOKEN: TOKEN })).toEqual({ inboxPrefix, token: TOKEN });
      expect(typeof load({ NATS_CREDS: creds }).authenticator).toBe("function");
    });
    test("tls:// URLs, a CA or a client certificate require TLS with those files", () => {
      expect(load({ NATS_URL: "tls://nats.internal:4222" }).tls).toEqual({});
      expect(load({ NATS_TLS_CA: ca }).tls).toEqual({ caFile: ca });
      expect(load({ NATS_TLS_CA: ca, NATS_TLS_CERT: cert, NATS_TLS_KEY: key }).tls).toEqual({
        caFile: ca,
        certFile: cert,
        keyFile: key,
      });
      expect(load({ NATS_URL: "nats://a:4222" }).tls).toBeUndefined();
    });
    test("invalid combinations are refused, naming the variables and never the secret", () => {
      const cases: [Record<string, string>, string][] = [
        [{ NATS_PASSWORD: PASSWORD }, "NATS_PASSWORD is set without NATS_USER"],
        [{ NATS_USER: "svc" }, "NATS_USER is set without NATS_PASSWORD"],
        [{ NATS_USER: "svc", NATS_PASSWORD: PASSWORD, NATS_TOKEN: TOKEN }, "NATS_USER and NATS_TOKEN"],
        [{ NATS_TOKEN: TOKEN, NATS_CREDS: creds }, "NATS_TOKEN and NATS_CREDS"],
        [{ NATS_TLS_CERT: cert }, "NATS_TLS_CERT and NATS_TLS_KEY go together"],
        [{ NATS_TLS_KEY: key }, "NATS_TLS_CERT and NATS_TLS_KEY go together"],
        [{ NATS_CREDS: join(dir, "missing.creds") }, "NATS_CREDS="],
        [{ NATS_CREDS: ca }, `NATS_CREDS=${JSON.stringify(ca)} is invalid: expected a .creds file`],
        [{ NATS_CREDS: brokenSeed }, "expected a .creds file (a user JWT and an nkey seed)"],
        [{ NATS_TLS_CA: join(dir, "missing.pem") }, "NATS_TLS_CA="],
        [{ NATS_TLS_CERT: join(dir, "gone.pem"), NATS_TLS_KEY: key }, "NATS_TLS_CERT="],
        [{ NATS_INBOX_PREFIX: "_INBOX.>" }, 'NATS_INBOX_PREFIX="_INBOX.>" is invalid: expected NATS subject tokens'],
        [{ NATS_TLS_CA: dir }, `NATS_TLS_CA=${JSON.stringify(dir)} is invalid: expected a PEM file`],
        [{ NATS_TLS_CA: notPem }, `NATS_TLS_CA=${JSON.stringify(notPem)} is invalid: expected a PEM file`],
        [{ NATS_TLS_CA: key }, `NATS_TLS_CA=${JSON.stringify(key)} is invalid`],
        [
          { NATS_TLS_CERT: key, NATS_TLS_KEY: cert },
          `NATS_TLS_CERT=${JSON.stringify(key)} is invalid: expected a PEM certificate`,
        ],
        [
          { NATS_TLS_CERT: key, NATS_TLS_KEY: cert },
          `NATS_TLS_KEY=${JSON.stringify(cert)} is invalid: expected a PEM private key`,
        ],
        [{ NATS_TLS_CERT: cert, NATS_TLS_KEY: other.key }, "NATS_TLS_KEY is not the private key of NATS_TLS_CERT"],
        [{ NATS_TLS_CERT: dir, NATS_TLS_KEY: key }, "NATS_TLS_CERT="],
      ];
      for (const [env, expected] of cases) {
        const problems = problemsOf(() => load(env));
        expect(problems, JSON.stringify(env)).toContain(expected);
        expect(problems).not.toContain(PASSWORD);
        expect(problems).not.toContain(TOKEN);
        expect(problems, "never the seed").not.toContain(seed.slice(2, -2));
      }
    });
  });
}

describe("NATS_INBOX_PREFIX", () => {
  test("set, it is every service's prefix, and the operator command's too", () => {
    for (const load of Object.values(loaders)) expect(load({ NATS_INBOX_PREFIX: "_INBOX" }).inboxPrefix).toBe("_INBOX");
    expect(loadNotificationConfig({ NATS_INBOX_PREFIX: "replies.ops-1" }).nats.opsInboxPrefix).toBe("replies.ops-1");
  });
  test("unset, `notification nats-dlq replay` uses the notification-ops user's inbox, not the service's", () => {
    expect(loadNotificationConfig({}).nats.opsInboxPrefix).toBe("_INBOX_notification_ops");
  });
  test("anything but dot-separated tokens of letters, digits, _ and - is refused, naming the variable", () => {
    const bad = ["*", "_INBOX.*", "a..b", ".a", "a.", "a b", "$JS", "inbox>", "a\tb", "x".repeat(129)];
    for (const value of bad)
      for (const load of Object.values(loaders))
        expect(
          problemsOf(() => load({ NATS_INBOX_PREFIX: value })),
          JSON.stringify(value),
        ).toContain("NATS_INBOX_PREFIX=");
    for (const value of ["_INBOX", "_INBOX_a-1", "a.b.c", "x".repeat(128)])
      expect(loaders.entitlement({ NATS_INBOX_PREFIX: value }).inboxPrefix).toBe(value);
  });
});

describe("NATS_URL", () => {
  const refused: [string, string][] = [
    ["nats://127.0.0.1:4222:99", "not a host[:port]"],
    [" , ", "an empty server"],
    ["nats://a:4222,", "an empty server"],
    ["ws://127.0.0.1:8080", "unsupported scheme ws://"],
    ["wss://nats.internal", "unsupported scheme wss://"],
    ["nats://127.0.0.1:99999", "not a host[:port]"],
    ["nats://127.0.0.1:0", "port 0"],
    ["nats://127.0.0.1:4222/path", "no path"],
    ["nats://:4222", "not a host"],
    ["nats://u:p%2Fw/x@h:4222:1", "is invalid"],
  ];
  test("a server list the client can never use stops the boot (exit 78), naming NATS_URL and never a password", () => {
    for (const [url, expected] of refused)
      for (const load of Object.values(loaders)) {
        const problems = problemsOf(() => load({ NATS_URL: url }));
        expect(problems, url).toContain("NATS_URL=");
        expect(problems, url).toContain(expected);
        expect(problems).not.toContain("p%2Fw");
      }
  });
  test("one or several nats://, tls:// or bare host:port servers, with or without credentials, are taken", () => {
    for (const url of ["nats://127.0.0.1:4222", "tls://a:4222, nats://b", "127.0.0.1:4222", "nats://u:p@[::1]:4222"])
      for (const load of Object.values(loaders)) expect(() => load({ NATS_URL: url }), url).not.toThrow();
  });
});

test("tls:// servers are handed to the client as nats:// (TLS is asked for by the tls option)", () => {
  expect(natsServers("tls://a:4222, nats://b:4223,TLS://c:1")).toEqual([
    "nats://a:4222",
    "nats://b:4223",
    "nats://c:1",
  ]);
});

test("both services redact the NATS secrets from their logs", () => {
  for (const secrets of [ENTITLEMENT_SECRETS, NOTIFICATION_SECRETS] as readonly (readonly string[])[]) {
    expect(secrets).toContain("NATS_PASSWORD");
    expect(secrets).toContain("NATS_TOKEN");
  }
});
