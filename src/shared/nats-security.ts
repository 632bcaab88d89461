// How a service proves who it is to NATS and keeps the link private: user and password, a token or a `.creds` file
// (JWT + nkey, the NATS 2.x way), and TLS with an optional CA and client certificate. The variables are validated
// once at boot with the rest of the configuration; files are read then, so an unreadable one (or a creds file that
// does not parse or whose seed cannot sign) stops the process with exit 78 instead of a connection that retries
// forever.
import { accessSync, constants, readFileSync } from "node:fs";
import type { Authenticator, TlsOptions } from "@nats-io/transport-node";
import { credsAuthenticator } from "@nats-io/transport-node";
import { Optional, type Rule, Str } from "./config.ts";
import { natsTlsFileProblems, natsUrlProblem } from "./nats-settings.ts";

/** The variables (part of CommonConfig). */
export const NatsSecurityConfig = {
  NATS_USER: Optional({
    description:
      "NATS user name (with NATS_PASSWORD). Give each service its own user with only its subjects: " +
      "deploy/nats/least-privilege.conf, docs/security.md.",
  }),
  NATS_PASSWORD: Optional({ description: "NATS password (requires NATS_USER). Secret: never logged." }),
  NATS_TOKEN: Optional({ description: "NATS authentication token (not with NATS_USER). Secret: never logged." }),
  NATS_CREDS: Optional({
    description:
      "Path of a NATS .creds file (user JWT + nkey seed), checked at boot; not with NATS_USER or NATS_TOKEN.",
  }),
  NATS_TLS_CA: Optional({
    description: "PEM file of the CA that signed the NATS server certificate, parsed at boot; setting it requires TLS.",
  }),
  NATS_TLS_CERT: Optional({
    description: "PEM client certificate for mutual TLS (with NATS_TLS_KEY), parsed at boot.",
  }),
  NATS_TLS_KEY: Optional({
    description: "PEM private key of NATS_TLS_CERT; boot checks that it is that certificate's key.",
  }),
};

/**
 * NATS_INBOX_PREFIX with `defaultPrefix`, the service's own (ADR-26): replies (publish acknowledgements, JetStream API
 * answers and the messages a pull consumer delivers) come to subjects under it, so a broker can let each user subscribe
 * to its own inbox alone. `note` adds what differs per executable.
 */
export const natsInboxPrefixConfig = (defaultPrefix: string, note = "") => ({
  NATS_INBOX_PREFIX: Str(defaultPrefix, {
    description:
      "Subject prefix of this client's reply inboxes (the client's own default is _INBOX): NATS subject tokens of " +
      "letters, digits, _ and -, separated by dots. A least-privilege broker lets each user subscribe to " +
      `<prefix>.> only (deploy/nats/least-privilege.conf).${note}`,
  }),
});

/** One or more subject tokens, no wildcard, no `$` (the server's own subjects), no whitespace. */
const INBOX_PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const INBOX_PREFIX_MAX_LENGTH = 128;

/** NATS_INBOX_PREFIX must be a subject the client can subscribe under (the client itself only rejects wildcards). */
export const natsInboxPrefixRule: Rule<{ NATS_INBOX_PREFIX: string }> = ({ NATS_INBOX_PREFIX: prefix }) =>
  INBOX_PREFIX.test(prefix) && prefix.length <= INBOX_PREFIX_MAX_LENGTH
    ? undefined
    : `NATS_INBOX_PREFIX=${JSON.stringify(prefix)} is invalid: expected NATS subject tokens (letters, digits, _ and -) ` +
      `separated by dots, at most ${INBOX_PREFIX_MAX_LENGTH} characters, such as _INBOX_entitlement`;

/** Variables whose values are secrets: redacted wherever a service logs them. */
export const NATS_SECRET_VARIABLES = ["NATS_PASSWORD", "NATS_TOKEN"] as const;

type NatsSecurityEnv = { NATS_URL: string; NATS_INBOX_PREFIX: string } & {
  [K in keyof typeof NatsSecurityConfig]?: string;
};

const FILE_VARIABLES = ["NATS_CREDS", "NATS_TLS_CA", "NATS_TLS_CERT", "NATS_TLS_KEY"] as const;

/**
 * The combinations that cannot mean anything, a server list the client cannot use, and files that cannot be read or
 * are not what their variable takes; messages never carry a secret.
 */
export const natsSecurityRule: Rule<NatsSecurityEnv> = (e) => {
  const problems: string[] = [];
  const urlProblem = natsUrlProblem(e.NATS_URL);
  if (urlProblem) problems.push(urlProblem);
  if (e.NATS_PASSWORD && !e.NATS_USER) problems.push("NATS_PASSWORD is set without NATS_USER: set both");
  if (e.NATS_USER && !e.NATS_PASSWORD) problems.push("NATS_USER is set without NATS_PASSWORD: set both");
  const methods = [e.NATS_USER && "NATS_USER", e.NATS_TOKEN && "NATS_TOKEN", e.NATS_CREDS && "NATS_CREDS"];
  const chosen = methods.filter(Boolean);
  if (chosen.length > 1) problems.push(`${chosen.join(" and ")} are both set: choose one way to authenticate to NATS`);
  if (Boolean(e.NATS_TLS_CERT) !== Boolean(e.NATS_TLS_KEY))
    problems.push("NATS_TLS_CERT and NATS_TLS_KEY go together: set both for mutual TLS, or neither");
  for (const name of FILE_VARIABLES) {
    const path = e[name];
    if (!path) continue;
    try {
      accessSync(path, constants.R_OK);
    } catch {
      problems.push(`${name}=${JSON.stringify(path)} is invalid: expected a readable file`);
      continue;
    }
    if (name === "NATS_CREDS" && !isCredsFile(path))
      problems.push(
        `NATS_CREDS=${JSON.stringify(path)} is invalid: expected a .creds file (a user JWT and an nkey seed)`,
      );
  }
  const readable = Object.fromEntries(
    FILE_VARIABLES.filter((name) => e[name] && !problems.some((p) => p.startsWith(`${name}=`))).map((n) => [n, e[n]]),
  );
  problems.push(...natsTlsFileProblems(readable));
  return problems.length ? problems : undefined;
};

/**
 * Whether the file parses as the client will parse it when connecting, and its seed can sign: otherwise the service
 * would retry a connection that can never succeed. The client's error never quotes the file, and neither do we.
 */
function isCredsFile(path: string): boolean {
  try {
    credsAuthenticator(new Uint8Array(readFileSync(path)))("boot-check");
    return true;
  } catch {
    return false;
  }
}

/** What connect() takes besides servers: authentication, TLS and the inbox prefix the broker's permissions expect. */
export type NatsSecurity = {
  inboxPrefix?: string;
  user?: string;
  pass?: string;
  token?: string;
  authenticator?: Authenticator;
  tls?: TlsOptions;
};

const TLS_SCHEME = /^tls:\/\//i;

/** Whether a NATS_URL asks for TLS: any of its servers given as tls://host:port. */
export const wantsTls = (url: string) => url.split(",").some((s) => TLS_SCHEME.test(s.trim()));

/** The connection settings of the parsed NATS variables; call only after natsSecurityRule passed. */
export function natsConnection(e: NatsSecurityEnv & { NATS_ENABLED: boolean; NATS_CONNECTION_TIMEOUT: number }) {
  return {
    enabled: e.NATS_ENABLED,
    url: e.NATS_URL,
    connectionTimeoutMs: e.NATS_CONNECTION_TIMEOUT,
    security: natsSecurity(e),
  };
}

/** The connect options of the parsed variables; call only after natsSecurityRule passed. */
export function natsSecurity(e: NatsSecurityEnv): NatsSecurity {
  const security: NatsSecurity = { inboxPrefix: e.NATS_INBOX_PREFIX };
  if (e.NATS_USER) Object.assign(security, { user: e.NATS_USER, pass: e.NATS_PASSWORD });
  if (e.NATS_TOKEN) security.token = e.NATS_TOKEN;
  // Read once at boot (checked readable by the rule): a rotated file takes effect at the next restart.
  if (e.NATS_CREDS) security.authenticator = credsAuthenticator(new Uint8Array(readFileSync(e.NATS_CREDS)));
  if (wantsTls(e.NATS_URL) || e.NATS_TLS_CA || e.NATS_TLS_CERT) {
    // An empty object already means "TLS required" to the client; the files add trust and a client identity.
    security.tls = {
      ...(e.NATS_TLS_CA ? { caFile: e.NATS_TLS_CA } : {}),
      ...(e.NATS_TLS_CERT ? { certFile: e.NATS_TLS_CERT, keyFile: e.NATS_TLS_KEY } : {}),
    };
  }
  return security;
}

/** The server list for connect(): the client knows no tls:// scheme, so TLS is asked for by `tls` instead. */
export const natsServers = (url: string) => url.split(",").map((s) => s.trim().replace(TLS_SCHEME, "nats://"));

/** A service's NATS variables: the connection's security and its inbox prefix (natsInboxPrefixConfig). */
export const natsVariables = (defaultPrefix: string, note = "") => ({
  ...NatsSecurityConfig,
  ...natsInboxPrefixConfig(defaultPrefix, note),
});

/** The rules of natsVariables' variables. */
export const natsRules = [natsSecurityRule, natsInboxPrefixRule];
